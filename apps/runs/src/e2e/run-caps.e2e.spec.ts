/**
 * End to end: run caps (issue 11, CONTRACT section 15) through the real gateway, runs service and scripted
 * model: a run ends with finish `length` at MAX_TOOL_CALLS_PER_RUN (default 50), and NUL bytes in a prompt or
 * in a tool's output neither fail an append nor the run (they are stored as U+FFFD).
 */
import { Platform, SseResponse } from '@interns/testing';
import type { JsonAnswer } from '@interns/testing';
import {
  chatPath,
  createRunningIntern,
  eventually,
  IDENTITIES,
  KEYS,
  prompt,
  promptBody,
  query,
  readStream,
  refusal,
  sessionEvents,
  sessionRuns,
} from '@interns/testing/e2e';

const MAX_TOOL_CALLS_PER_RUN = 50;
let platform: Platform;
let internId: string;

beforeAll(async () => {
  platform = await Platform.start({ env: { CHAT_TURNS_PER_MINUTE: '1000' } });
  await platform.applyIdentities(IDENTITIES);
  internId = await createRunningIntern(platform);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

type RecordedEvent = { type: string; data: Record<string, unknown> };

async function recorded(sessionId: string): Promise<RecordedEvent[]> {
  return (await sessionEvents(platform, sessionId)) as RecordedEvent[];
}

const countOf = (events: RecordedEvent[], type: string) => events.filter((event) => event.type === type).length;

describe('MAX_TOOL_CALLS_PER_RUN', () => {
  it(`ends a run that asks for tool call ${MAX_TOOL_CALLS_PER_RUN + 1} with finish length, after exactly ${MAX_TOOL_CALLS_PER_RUN} calls`, async () => {
    const lines = Array.from({ length: 60 }, (_, index) => `/shell echo ${index + 1}`);
    const summary = await readStream(await prompt(platform, internId, lines.join('\n')), 60_000);

    // A finish shaped like `stop` (checkStream): delta {}, then the final chunk with usage, then [DONE].
    expect(summary).toMatchObject({ finishReason: 'length', toolCall: null, error: null });
    expect(summary.usage).not.toBeNull();
    // Turn k streams the output of call k - 1: the 50 calls made, and not the 51st the model asked for.
    const echoed = Array.from({ length: MAX_TOOL_CALLS_PER_RUN }, (_, index) => String(index + 1));
    expect(summary.content.split('\n').filter((line) => line !== '')).toEqual(echoed);

    const events = await recorded(summary.sessionId);
    expect(countOf(events, 'ToolCalled')).toBe(MAX_TOOL_CALLS_PER_RUN);
    expect(countOf(events, 'ToolCompleted')).toBe(MAX_TOOL_CALLS_PER_RUN);
    expect(events.at(-1)).toMatchObject({ type: 'RunFinished', data: { finishReason: 'length', error: null } });
    expect(await sessionRuns(platform, summary.sessionId)).toEqual([{ status: 'finished', finish_reason: 'length' }]);

    // Relayed to analytics as it is.
    const facts = await eventually(
      () => query<{ finish_reason: string | null }>(platform, 'SELECT finish_reason FROM analytics.run_facts WHERE session_id = $1', [summary.sessionId]),
      (rows) => rows.length === 1 && rows[0].finish_reason !== null,
      10_000,
    );
    expect(facts).toEqual([{ finish_reason: 'length' }]);

    // The cap is per run: the session takes the next prompt.
    const next = await readStream(await prompt(platform, internId, '/shell echo again', { sessionId: summary.sessionId }));
    expect(next).toMatchObject({ finishReason: 'stop', content: 'again\n' });
  }, 90_000);
});

describe('NUL bytes', () => {
  it('streams a prompt holding NUL back and records it with U+FFFD in its place', async () => {
    const summary = await readStream(await prompt(platform, internId, 'before\u0000after'));
    expect(summary).toMatchObject({ finishReason: 'stop', content: 'before\u0000after', error: null });

    const events = await recorded(summary.sessionId);
    expect(events.find((event) => event.type === 'RunStarted')?.data.prompt).toBe('before\uFFFDafter');
    expect(events.find((event) => event.type === 'OutputProduced')?.data.text).toBe('before\uFFFDafter');
    expect(await sessionRuns(platform, summary.sessionId)).toEqual([{ status: 'finished', finish_reason: 'stop' }]);
  });

  it('finishes a run whose tool output holds NUL', async () => {
    const summary = await readStream(await prompt(platform, internId, "/shell printf 'a\\0b'"));
    expect(summary).toMatchObject({ finishReason: 'stop', content: 'a\u0000b', error: null });

    const events = await recorded(summary.sessionId);
    expect(events.find((event) => event.type === 'ToolCompleted')?.data.result).toBe('a\uFFFDb');
    expect(await sessionRuns(platform, summary.sessionId)).toEqual([{ status: 'finished', finish_reason: 'stop' }]);
  });

  it('refuses a session_id holding NUL with 400 invalid_body (it names a stream, which cannot hold one)', async () => {
    const answer = await platform.post(chatPath(internId), KEYS.alice, promptBody('/say hi', { sessionId: 'a\u0000b' }));
    expect(answer instanceof SseResponse).toBe(false);
    expect({ status: answer.status, body: (answer as JsonAnswer).body }).toEqual({ status: 400, body: refusal(400, 'invalid_body') });
  });
});
