import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type StreamConfig } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/** Limits of a stream a service owns (JETSTREAM_MAX_AGE_MS, JETSTREAM_MAX_BYTES, JETSTREAM_REPLICAS, or its own). */
export interface StreamLimits {
  maxAgeMs: number;
  maxBytes: number;
  replicas: number;
}

/** 7 days, 1 GiB, one replica: a consumer may be away a week before messages it has not read are dropped. */
export const DEFAULT_STREAM_LIMITS: StreamLimits = { maxAgeMs: 7 * 24 * 3600 * 1000, maxBytes: 1024 ** 3, replicas: 1 };

/** nats-server's answer when another client added the stream first. */
const STREAM_NAME_IN_USE = 10058;

/**
 * Adds the stream when missing (tolerating another replica, or a consumer, adding it at the same moment), and
 * brings its limits to `limits` when they differ. Only the stream's owner calls it.
 */
export async function ensureStream(nc: NatsConnection, name: string, subjects: string[], limits: StreamLimits): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const wanted = streamConfigOf(limits);
  let config: StreamConfig;
  try {
    config = (await jsm.streams.info(name)).config;
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
    try {
      config = (await jsm.streams.add({ name, subjects, ...wanted })).config;
    } catch (addError) {
      if (!(addError instanceof JetStreamApiError && addError.code === STREAM_NAME_IN_USE)) throw addError;
      config = (await jsm.streams.info(name)).config;
    }
  }
  const differs = (Object.keys(wanted) as (keyof typeof wanted)[]).some((key) => config[key] !== wanted[key]);
  if (differs) await jsm.streams.update(name, { ...wanted });
}

function streamConfigOf(limits: StreamLimits): Pick<StreamConfig, 'max_age' | 'max_bytes' | 'num_replicas'> {
  return { max_age: limits.maxAgeMs * 1_000_000, max_bytes: limits.maxBytes, num_replicas: limits.replicas };
}
