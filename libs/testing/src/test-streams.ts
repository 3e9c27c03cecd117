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
export async function deleteTestStreams(prefix: string, natsUrl = process.env.NATS_URL ?? 'nats://127.0.0.1:4222'): Promise<void> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    const streamPrefix = `${prefix.replace(/[^A-Za-z0-9_-]/g, '_')}_`;
    for await (const name of jsm.streams.names()) {
      if (name.startsWith(streamPrefix)) await jsm.streams.delete(name).catch(() => undefined);
    }
  } finally {
    await nc.close();
  }
}
