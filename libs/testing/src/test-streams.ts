import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

/**
 * Stream limits for tests. JetStream reserves a stream's `max_bytes` against the server's storage, and every
 * test file makes streams of its own on the shared server: the production default (1 GiB) would exhaust it
 * after a few dozen ("insufficient storage resources available").
 */
export const TEST_JETSTREAM_MAX_BYTES = 4 * 1024 * 1024;
export const TEST_STREAM_LIMITS = { maxAgeMs: 3_600_000, maxBytes: TEST_JETSTREAM_MAX_BYTES, replicas: 1 };

/** Deletes the JetStream streams made under a test's NATS prefix, so the shared server does not collect them. */
export function deleteTestStreams(prefix: string, natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222'): Promise<number> {
  return deleteStreamsOfPrefixes([prefix], natsUrl);
}

/** Deletes the streams under any of `prefixes` (one listing of the server's streams); answers how many. */
export async function deleteStreamsOfPrefixes(prefixes: readonly string[], natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222'): Promise<number> {
  if (prefixes.length === 0) return 0;
  // By name alone (not the contracts' isStreamOfPrefix: this file also runs in jest's global teardown and test
  // environment, where the @interns aliases do not resolve). Test prefixes (`test_` and 10 hex digits) are never
  // the start of one another, so a name is enough.
  const streamPrefixes = prefixes.map((prefix) => `${prefix.replace(/[^A-Za-z0-9_-]/g, '_')}_`);
  const nc = await connect({ servers: natsUrl });
  let deleted = 0;
  try {
    const jsm = await jetstreamManager(nc);
    const names: string[] = [];
    for await (const name of jsm.streams.names()) names.push(name);
    for (const name of names) {
      if (!streamPrefixes.some((streamPrefix) => name.startsWith(streamPrefix))) continue;
      if (await jsm.streams.delete(name).catch(() => false)) deleted += 1;
    }
  } finally {
    await nc.close();
  }
  return deleted;
}
