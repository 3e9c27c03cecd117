import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type StreamConfig } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/** nats-server's answer when another gateway replica added the stream first. */
const STREAM_NAME_IN_USE = 10058;
const NANOS_PER_MS = 1_000_000;

export interface WorkspaceEventStreamSettings {
  /** `subjects.workspaceEventStreamName`. */
  name: string;
  /** The integration event streams it sources (`subjects.eventStreamName(source)`). */
  sources: string[];
  /** How long it keeps an event (max age): the feed's history window. */
  keepMs: number;
  maxBytes: number;
  replicas: number;
}

/**
 * Adds the stream that sources every integration event stream into one order (the server copies their messages in;
 * nobody publishes to it), or brings its limits up to date. A new stream starts its sources `keepMs` back, not at
 * their first message (the sources keep a week). Every gateway replica calls it at start; the first one adds it.
 */
export async function ensureWorkspaceEventStream(nc: NatsConnection, settings: WorkspaceEventStreamSettings): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const limits: Pick<StreamConfig, 'max_age' | 'max_bytes' | 'num_replicas'> = {
    max_age: settings.keepMs * NANOS_PER_MS,
    max_bytes: settings.maxBytes,
    num_replicas: settings.replicas,
  };
  let config: StreamConfig;
  try {
    config = (await jsm.streams.info(settings.name)).config;
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error;
    const since = new Date(Date.now() - settings.keepMs).toISOString();
    try {
      config = (
        await jsm.streams.add({
          name: settings.name,
          sources: settings.sources.map((name) => ({ name, opt_start_time: since })),
          ...limits,
        })
      ).config;
    } catch (addError) {
      if (!(addError instanceof JetStreamApiError && addError.code === STREAM_NAME_IN_USE)) throw addError;
      config = (await jsm.streams.info(settings.name)).config;
    }
  }
  const differs = (Object.keys(limits) as (keyof typeof limits)[]).some((key) => config[key] !== limits[key]);
  if (differs) await jsm.streams.update(settings.name, { ...limits });
}
