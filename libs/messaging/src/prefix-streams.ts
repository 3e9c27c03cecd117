import { JetStreamApiCodes, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { isStreamOfPrefix } from '@interns/contracts';

/** A stream of a NATS_PREFIX as listed: its name and what it holds. */
export interface PrefixStream {
  name: string;
  messages: number;
  bytes: number;
}

/** How long one JetStream API request (a list page, a delete) may take before it fails. */
const JETSTREAM_API_TIMEOUT_MS = 5000;

/** The JetStream streams (KV buckets and object stores included) that belong to `prefix` (isStreamOfPrefix), by name. */
export async function listPrefixStreams(nc: NatsConnection, prefix: string): Promise<PrefixStream[]> {
  const jsm = await jetstreamManager(nc, { timeout: JETSTREAM_API_TIMEOUT_MS });
  const found: PrefixStream[] = [];
  for await (const info of jsm.streams.list()) {
    if (!isStreamOfPrefix(info.config, prefix)) continue;
    found.push({ name: info.config.name, messages: info.state.messages, bytes: info.state.bytes });
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/** Deletes these streams; resolves to the names deleted (a stream gone meanwhile is not an error, nor listed). */
export async function deleteStreams(nc: NatsConnection, names: readonly string[]): Promise<string[]> {
  const jsm = await jetstreamManager(nc, { timeout: JETSTREAM_API_TIMEOUT_MS });
  const deleted: string[] = [];
  for (const name of names) {
    const gone = await jsm.streams.delete(name).catch((error: unknown) => {
      if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) return false;
      throw error;
    });
    if (gone) deleted.push(name);
  }
  return deleted;
}
