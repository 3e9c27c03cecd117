/**
 * End to end: events that never stall a relay (CONTRACT section 16). A run whose tool output (400 KB) and answer
 * are far over MAX_EVENT_BYTES is recorded with its text cut and marked; the relays go on: a later run's facts
 * reach analytics and the runs relay's lag returns to 0.
 */
import { Platform } from '@interns/testing';
import { createRunningIntern, eventually, IDENTITIES, prompt, query, readStream } from '@interns/testing/e2e';

const OUTPUT_BYTES = 400 * 1024;
const MAX_EVENT_BYTES = 262144;

let platform: Platform;
let internId: string;

beforeAll(async () => {
  // Keep the whole 400 KB of output (the default keeps 64 KiB), so the run's events are over the limit.
  platform = await Platform.start({ env: { SHELL_OUTPUT_LIMIT_BYTES: String(1024 * 1024), CHAT_TURNS_PER_MINUTE: '1000' } });
  await platform.applyIdentities(IDENTITIES);
  internId = await createRunningIntern(platform, undefined, 30_000);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

function runFinished(sessionId: string) {
  return eventually(
    () => query<{ finish_reason: string | null }>(platform, 'SELECT finish_reason FROM analytics.run_facts WHERE session_id = $1', [sessionId]),
    (rows) => rows.length === 1 && rows[0].finish_reason !== null,
    20_000,
  );
}

async function runsRelayLag(): Promise<number | null> {
  const text = await (await fetch(`${platform.process('runs').url}/metrics`)).text();
  const line = text.split('\n').find((row) => row.startsWith('interns_outbox_relay_lag_seconds{relay="runs"}'));
  return line ? Number(line.split(' ').at(-1)) : null;
}

it('stores a run with a 400 KB tool output and answer cut to MAX_EVENT_BYTES, and the relays keep flowing', async () => {
  const flood = await readStream(await prompt(platform, internId, `/shell yes x | head -c ${OUTPUT_BYTES}`), 60_000);
  expect(flood.finishReason).toBe('stop');
  // The caller sees the whole answer; only what is recorded is cut.
  expect(flood.content.length).toBeGreaterThanOrEqual(OUTPUT_BYTES);

  const events = await query<{ type: string; data: unknown; metadata: unknown }>(
    platform,
    'SELECT type, data, metadata FROM runs.events WHERE stream_id = $1 ORDER BY stream_version',
    [`session-${flood.sessionId}`],
  );
  const sizes = events.map((event) => Buffer.byteLength(JSON.stringify(event.data)) + Buffer.byteLength(JSON.stringify(event.metadata)));
  expect(Math.max(...sizes)).toBeLessThanOrEqual(MAX_EVENT_BYTES);
  expect(events.filter((event) => /… \[truncated \d+ bytes\]/.test(JSON.stringify(event.data))).length).toBeGreaterThanOrEqual(1);
  expect(await runFinished(flood.sessionId)).toEqual([{ finish_reason: 'stop' }]);

  const later = await readStream(await prompt(platform, internId, '/say after the flood'));
  expect(later.content).toBe('after the flood');
  expect(await runFinished(later.sessionId)).toEqual([{ finish_reason: 'stop' }]);
  expect(await eventually(runsRelayLag, (lag) => lag === 0, 10_000)).toBe(0);
  expect(await query(platform, 'SELECT 1 FROM runs.parked_messages')).toEqual([]);
}, 120_000);
