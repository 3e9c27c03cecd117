/**
 * A test file that leaves streams behind and fails: test-environment.int.spec.ts runs it in a jest of its own to
 * see that its environment deletes them anyway. Not matched by the suite's testMatch (it is a fixture).
 */
import { writeFileSync } from 'node:fs';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { testNatsPrefix } from '@interns/testing';

const prefix = testNatsPrefix();

beforeAll(async () => {
  writeFileSync(process.env.LEAKY_FILE_PREFIX_OUT as string, prefix);
  const nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: `${prefix}_lifecycle_events`, subjects: [`${prefix}.evt.lifecycle.>`], max_bytes: 1024 * 1024 });
    await jsm.streams.add({ name: `${prefix}_run_chunks`, subjects: [`${prefix}.runs.chunks.>`], max_bytes: 1024 * 1024 });
  } finally {
    await nc.close();
  }
});

afterAll(() => {
  throw new Error('this file never cleans up');
});

it('fails', () => {
  expect('left behind').toBe('cleaned up');
});
