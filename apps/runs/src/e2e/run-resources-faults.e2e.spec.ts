/**
 * End to end: runs as resources (CONTRACT section 12) under faults, over HTTP against the real processes.
 * - A gateway stopped with SIGTERM mid-chat severs its client (502 `stream_severed`); a `background` chat's run
 *   goes on, and a new gateway process resumes it after the client's `Last-Event-ID`: the rest of the run, ids
 *   numbered on without a gap, to `stop`, the final chunk and `[DONE]`, and the run ends `completed`. The same
 *   SIGTERM cancels a chat that did not ask for the background.
 * - A runs replica killed (SIGKILL) leaves its runs recorded as going; the reconciler of the runs process
 *   started after it ends them `failed` (`error`, `ended_at` set), and appends an `internal_error` error chunk,
 *   the final chunk and `[DONE]` to their chunk logs, so a reader that followed through the kill ends as well.
 * - Retention: a run's stream replays until RUN_REPLAY_RETENTION_MS after the run ended, then answers 410
 *   `run_expired`, while the run itself stays readable.
 */
import { Platform, SseResponse } from '@interns/testing';
import type { JsonAnswer } from '@interns/testing';
import {
  API,
  asStream,
  chat,
  CHUNK_ID,
  createRunningIntern,
  eventually,
  followRun,
  IDENTITIES,
  ISO_MS,
  KEYS,
  promptBody,
  query,
  refusal,
  runEventsOf,
  runOf as runOfAs,
  runPath,
  runsPath,
  sleep,
  type RunEvent,
  UUID,
} from '@interns/testing/e2e';

const RUN_RECONCILE_INTERVAL_MS = 500;
const RUN_REPLAY_RETENTION_MS = 3000;
/** The reconciler leaves runs younger than this alone (their owner may still be subscribing): orphan-reaper.ts. */
const RECONCILER_START_GRACE_MS = 5000;
const SCRIPTED = 'local/scripted';
/**
 * How long the gateway test's runs sleep between their two lines: longer than a gateway's stop and restart, which
 * takes about 1 s on a quiet machine and was seen above 6 s on a loaded one.
 */
const RUN_SLEEP_MS = 15_000;

let platform: Platform;
/** One intern per test, so no test's runs count against another's concurrent-run limit. */
const interns = { gateway: '', killed: '', retention: '' };

beforeAll(async () => {
  platform = await Platform.start({
    env: {
      RUN_RECONCILE_INTERVAL_MS: String(RUN_RECONCILE_INTERVAL_MS),
      RUN_REPLAY_RETENTION_MS: String(RUN_REPLAY_RETENTION_MS),
      STREAM_HEARTBEAT_MS: '200',
      KEEPALIVE_INTERVAL_MS: '300',
      CHAT_TURNS_PER_MINUTE: '1000',
    },
  });
  await platform.applyIdentities(IDENTITIES);
  await Promise.all((Object.keys(interns) as (keyof typeof interns)[]).map(async (name) => (interns[name] = await createRunningIntern(platform))));
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});


type Event = RunEvent;

/** A run's stream (GET): an event stream, or the JSON refusal. */
function follow(internId: string, runId: string, headers?: Record<string, string>): Promise<SseResponse | JsonAnswer> {
  return followRun(platform, internId, runId, { headers });
}

const eventsOf = runEventsOf;

/** Follows a run's stream to its end. */
async function followToEnd(internId: string, runId: string, headers?: Record<string, string>): Promise<Event[]> {
  const stream = asStream(await follow(internId, runId, headers));
  expect(stream.status).toBe(200);
  expect(stream.headers['x-run-id']).toBe(runId);
  await stream.all(25_000);
  return eventsOf(stream);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- chunks are checked shape by shape
const chunkOf = (event: Event): any => JSON.parse(event.data);
const contentOf = (events: Event[]) =>
  events
    .filter((event) => event.data !== '[DONE]')
    .map((event) => chunkOf(event).choices[0]?.delta?.content ?? '')
    .join('');

function runOf(internId: string, runId: string) {
  return runOfAs(platform, internId, runId);
}

function untilEnded(internId: string, runId: string, timeoutMs: number) {
  return eventually(
    () => runOf(internId, runId),
    (run) => run.ended_at !== null,
    timeoutMs,
  );
}

/** The ids of the runs of the intern still going (`running` or `awaiting_input`). */
async function goingRunIds(internId: string): Promise<string[]> {
  const listed = await platform.api(`${runsPath(internId)}?status=running%2Cawaiting_input`, { token: KEYS.alice });
  expect(listed.status).toBe(200);
  return listed.body.data.map((run: { id: string }) => run.id);
}

async function invoke(internId: string, input: string): Promise<{ session_id: string; run_id: string }> {
  const response = await platform.api(`${API}/interns/${internId}/invoke`, { token: KEYS.alice, json: { input } });
  expect(response.status).toBe(202);
  expect(response.body).toEqual({ session_id: expect.any(String), status: 'started', run_id: expect.stringMatching(UUID) });
  return response.body;
}

/** The two chunks before `[DONE]` of a stream that ended in error: the retryable error chunk, then the final chunk (usage null). */
function expectErrorEnding(events: Event[], ending: { code: number; reason: string; sessionId: string }): void {
  const [error, final] = events.slice(-3, -1).map(chunkOf);
  expect(error).toEqual({
    id: expect.stringMatching(CHUNK_ID),
    object: 'chat.completion.chunk',
    created: expect.any(Number),
    model: SCRIPTED,
    choices: [{ index: 0, delta: {}, finish_reason: 'error' }],
    error: { code: ending.code, message: expect.any(String), metadata: { reason: ending.reason, retryable: true } },
  });
  expect(final).toEqual({
    id: error.id,
    object: 'chat.completion.chunk',
    created: expect.any(Number),
    model: SCRIPTED,
    choices: [],
    session_id: ending.sessionId,
    usage: null,
  });
}

/** A chat stream that ended because its link to the run broke: the gateway's 502 `stream_severed`, the final chunk (no ids), `[DONE]`. */
function expectSeveredEnd(events: Event[], sessionId: string): void {
  expect(events.slice(-3).map((event) => event.id)).toEqual([undefined, undefined, undefined]);
  expect(events.at(-1)?.data).toBe('[DONE]');
  expect(events.filter((event) => event.data === '[DONE]')).toHaveLength(1);
  expectErrorEnding(events, { code: 502, reason: 'stream_severed', sessionId });
}

/** Numbered events (every one but `[DONE]`), ids consecutive from `first`. */
function expectNumberedFrom(events: Event[], first: number): void {
  expect(events.at(-1)).toEqual({ id: undefined, data: '[DONE]' });
  const numbered = events.slice(0, -1).map((event) => event.id);
  expect(numbered).toEqual(numbered.map((_id, index) => String(first + index)));
}

describe('a gateway stopped with SIGTERM mid-chat', () => {
  it('keeps a background chat run going, resumable through a new gateway after Last-Event-ID; cancels a chat without background', async () => {
    // The run's sleep outlasts the gateway's stop and restart, so the new gateway follows it live.
    const script = `/say start\n/sleep ${RUN_SLEEP_MS}\n/say end`;
    const kept = asStream(await chat(platform, interns.gateway, { ...promptBody(script), background: true }));
    const lost = asStream(await chat(platform, interns.gateway, promptBody(script)));
    const keptRunId = kept.headers['x-run-id'] as string;
    const lostRunId = lost.headers['x-run-id'] as string;
    expect([keptRunId, lostRunId]).toEqual([expect.stringMatching(UUID), expect.stringMatching(UUID)]);
    await Promise.all([kept, lost].map((stream) => stream.until(() => stream.content === 'start')));

    await platform.stopService('gateway', 'SIGTERM');
    // Each client's stream ends at once with the gateway's stream_severed ending, after the chunks it got (ids 1, 2, ...).
    await Promise.all([kept.all(5_000), lost.all(5_000)]);
    const seen = eventsOf(kept);
    const keptSessionId = chunkOf(seen.at(-2) as Event).session_id as string;
    expectSeveredEnd(seen, keptSessionId);
    expectSeveredEnd(eventsOf(lost), chunkOf(eventsOf(lost).at(-2) as Event).session_id);
    const seenNumbered = seen.filter((event) => event.id !== undefined);
    expect(seenNumbered.map((event) => event.id)).toEqual(seenNumbered.map((_event, index) => String(index + 1)));
    expect(contentOf(seenNumbered)).toBe('start');
    const lastSeenId = seenNumbered.at(-1)?.id as string;

    const restartedAt = Date.now();
    await platform.startService('gateway');
    const gatewayBackAt = Date.now();

    // The background run outlived its gateway and is still going: the new gateway follows it live from the resume point.
    expect((await runOf(interns.gateway, keptRunId)).status).toBe('running');
    const resuming = followToEnd(interns.gateway, keptRunId, { 'last-event-id': lastSeenId });

    // Meanwhile: the chat without background ended with its client, cancelled (a stop for its readers) by the
    // gateway's shutdown, before the new gateway was up.
    const lostRun = await untilEnded(interns.gateway, lostRunId, 2_000);
    expect(lostRun).toMatchObject({ status: 'cancelled', finish_reason: 'stop', ended_at: expect.stringMatching(ISO_MS) });
    expect(Date.parse(lostRun.ended_at)).toBeLessThan(gatewayBackAt);

    const rest = await resuming;
    expectNumberedFrom(rest, Number(lastSeenId) + 1);
    expect(contentOf([...seenNumbered, ...rest])).toBe('start\nend');
    const restChunks = rest.slice(0, -1).map(chunkOf);
    // The same response goes on: the chunk id of what the client saw, a stop finish, the final chunk with usage.
    const responseId = chunkOf(seenNumbered[0]).id as string;
    for (const chunk of restChunks) expect(chunk).toMatchObject({ id: responseId, object: 'chat.completion.chunk', model: SCRIPTED });
    expect(restChunks.at(-2).choices).toEqual([{ index: 0, delta: {}, finish_reason: 'stop' }]);
    expect(restChunks.at(-1)).toEqual({
      id: responseId,
      object: 'chat.completion.chunk',
      created: expect.any(Number),
      model: SCRIPTED,
      choices: [],
      session_id: keptSessionId,
      usage: expect.objectContaining({ total_tokens: expect.any(Number) }),
    });
    // What the client saw before the gateway went, then the resumed rest: exactly the run's whole log.
    expect([...seenNumbered, ...rest]).toEqual(await followToEnd(interns.gateway, keptRunId));
    expect(await runOf(interns.gateway, keptRunId)).toMatchObject({
      status: 'completed',
      finish_reason: 'stop',
      origin: 'chat',
      session_id: keptSessionId,
      ended_at: expect.stringMatching(ISO_MS),
    });

    expect(await goingRunIds(interns.gateway)).toEqual([]);
    console.log(`gateway restarted in ${gatewayBackAt - restartedAt} ms`);
  }, 60_000);
});

describe('a runs replica killed (SIGKILL) with runs going', () => {
  it("ends its runs failed through the next runs process's reconciler; a reader that followed through the kill gets the ending", async () => {
    const invoked = await invoke(interns.killed, '/say start\n/sleep 20000\n/say never');
    const chatting = asStream(await chat(platform, interns.killed, promptBody('/say chatting\n/sleep 20000\n/say never')));
    const chatRunId = chatting.headers['x-run-id'] as string;
    const startedAt = Date.now();
    const reader = asStream(await follow(interns.killed, invoked.run_id));
    await reader.until(() => reader.content === 'start');
    await chatting.until(() => chatting.content === 'chatting');

    const killedAt = Date.now();
    await platform.stopService('runs', 'SIGKILL');
    // The chat's client hears the silence as a severed link; the runs stay recorded as going while no runs process is up.
    await chatting.all(5_000);
    expectSeveredEnd(eventsOf(chatting), chunkOf(eventsOf(chatting).at(-2) as Event).session_id);
    expect(reader.isEnded).toBe(false);
    // Read from runs' table while no runs process is up (the list route is served by runs): after the restart the
    // reconciler may already have ended them, when the start took longer than what is left of its grace.
    const recorded = await query<{ id: string }>(platform, `SELECT id FROM runs.runs WHERE intern_id = $1 AND status IN ('running', 'awaiting_input')`, [
      interns.killed,
    ]);
    expect(recorded.map((row) => row.id).sort()).toEqual([invoked.run_id, chatRunId].sort());

    await platform.startService('runs');
    const restartedAt = Date.now();

    // The reconciler leaves runs younger than its grace alone, then ends them on its next rounds.
    const ended = await untilEnded(interns.killed, invoked.run_id, RECONCILER_START_GRACE_MS + 5_000);
    const endedAfterMs = Date.now() - restartedAt;
    // Within a few reconciler rounds of the grace running out.
    expect(Date.now() - startedAt).toBeLessThan(RECONCILER_START_GRACE_MS + 4 * RUN_RECONCILE_INTERVAL_MS + 3_000);
    expect(ended).toMatchObject({ status: 'failed', finish_reason: 'error', ended_at: expect.stringMatching(ISO_MS), open_question: null });
    // Ended by the runs process started after the kill, once the run was older than the reconciler's grace.
    expect(Date.parse(ended.ended_at)).toBeGreaterThan(killedAt);
    expect(Date.parse(ended.ended_at)).toBeGreaterThanOrEqual(startedAt + RECONCILER_START_GRACE_MS - 1_000);
    const chatRun = await untilEnded(interns.killed, chatRunId, 2_000);
    expect(chatRun).toMatchObject({ status: 'failed', finish_reason: 'error', ended_at: expect.stringMatching(ISO_MS) });
    expect(await goingRunIds(interns.killed)).toEqual([]);

    // The reader that followed the run through the kill ends: the chunks it had, then the reconciler's ending, numbered on.
    await reader.all(5_000);
    const followed = eventsOf(reader);
    expectNumberedFrom(followed, 1);
    expect(contentOf(followed)).toBe('start');
    expectErrorEnding(followed, { code: 500, reason: 'internal_error', sessionId: invoked.session_id });
    // A new reader replays the same log (within retention), and so does one of the chat's run.
    expect(await followToEnd(interns.killed, invoked.run_id)).toEqual(followed);
    const chatLog = await followToEnd(interns.killed, chatRunId);
    expectNumberedFrom(chatLog, 1);
    expect(contentOf(chatLog)).toBe('chatting');
    expect(chunkOf(chatLog.at(-3) as Event).error.metadata.reason).toBe('internal_error');

    // The cancel of an ended run is refused.
    const cancel = await platform.api(`${runPath(interns.killed, invoked.run_id)}/cancel`, { method: 'POST', token: KEYS.alice, raw: '' });
    expect({ status: cancel.status, body: cancel.body }).toEqual({ status: 409, body: refusal(409, 'run_not_active') });
    console.log(`runs restarted; orphaned runs failed ${endedAfterMs} ms later`);
  }, 40_000);
});

describe('replay retention', () => {
  it('replays a run for RUN_REPLAY_RETENTION_MS after it ended, then answers 410 run_expired; the run stays readable', async () => {
    const invoked = await invoke(interns.retention, '/say kept');
    const ended = await untilEnded(interns.retention, invoked.run_id, 5_000);
    expect(ended).toMatchObject({ status: 'completed', finish_reason: 'stop' });
    const endedAt = Date.parse(ended.ended_at);

    const replayed = await followToEnd(interns.retention, invoked.run_id);
    expectNumberedFrom(replayed, 1);
    expect(contentOf(replayed)).toBe('kept');
    // Still kept shortly before retention runs out, and a resume works too.
    await sleep(Math.max(0, endedAt + RUN_REPLAY_RETENTION_MS - 600 - Date.now()));
    expect(await followToEnd(interns.retention, invoked.run_id, { 'last-event-id': '1' })).toEqual(replayed.slice(1));

    const expired = await eventually(
      async () => {
        const response = await follow(interns.retention, invoked.run_id);
        if (response instanceof SseResponse) {
          await response.all(5_000);
          return { at: Date.now(), status: response.status, body: null as unknown };
        }
        return { at: Date.now(), status: response.status, body: response.body as unknown };
      },
      (answer) => answer.status !== 200,
      3_000,
    );
    expect({ status: expired.status, body: expired.body }).toStrictEqual({
      status: 410,
      body: { error: { code: 410, message: expect.any(String), metadata: { reason: 'run_expired', retryable: false } } },
    });
    // Not before the retention ran out (the replay just before it still worked), and not long after.
    expect(expired.at).toBeGreaterThan(endedAt + RUN_REPLAY_RETENTION_MS);
    expect(expired.at).toBeLessThan(endedAt + RUN_REPLAY_RETENTION_MS + 1_500);
    // A resume is refused the same way; the run itself is still there.
    const resumed = await follow(interns.retention, invoked.run_id, { 'last-event-id': '1' });
    expect(resumed instanceof SseResponse).toBe(false);
    expect({ status: resumed.status, body: (resumed as JsonAnswer).body }).toEqual({ status: 410, body: refusal(410, 'run_expired') });
    const run = await platform.api(runPath(interns.retention, invoked.run_id), { token: KEYS.alice });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ id: invoked.run_id, status: 'completed', ended_at: ended.ended_at });
  }, 20_000);
});
