/**
 * End to end: runs as resources (CONTRACT section 12) through the real gateway, runs service and scripted
 * model: chunk ids across a run's responses, X-Run-Id and invoke's run_id, the run list and get, following a
 * run's stream (replay, resume after Last-Event-ID or starting_after, several readers, the seam between stored
 * and live chunks), background chats, cancel, the question inbox and its answer route, expiry of questions,
 * and who sees which run.
 */
import { randomUUID } from 'node:crypto';
import { Platform, SseResponse } from '@interns/testing';
import {
  answer,
  API,
  asJson,
  asStream,
  chat,
  createRunningIntern,
  elicitationArguments,
  elicitationReply,
  eventually,
  followRun,
  IDENTITIES,
  ISO_MS,
  KEYS,
  permissionArguments,
  prompt,
  promptBody,
  readStream,
  refusal,
  runEventsOf,
  runOf as runOfAs,
  runPath,
  runsPath,
  type RunEvent,
  UUID,
} from '@interns/testing/e2e';

const INTERACTION_DEADLINE_MS = 2000;
const READERS_PER_CALLER = 3;
let platform: Platform;

/** One intern per concern, so no test's runs count against another's concurrent-run limit. */
const interns = { ids: '', list: '', follow: '', cancel: '', inbox: '', expiry: '', visibility: '' };

beforeAll(async () => {
  platform = await Platform.start({
    env: {
      STREAM_HEARTBEAT_MS: '200',
      KEEPALIVE_INTERVAL_MS: '300',
      INTERACTION_DEADLINE_MS: String(INTERACTION_DEADLINE_MS),
      CHAT_TURNS_PER_MINUTE: '1000',
      RUN_STREAM_READERS_PER_CALLER: String(READERS_PER_CALLER),
    },
  });
  await platform.applyIdentities(IDENTITIES);
  await Promise.all((Object.keys(interns) as (keyof typeof interns)[]).map(async (name) => (interns[name] = await createRunningIntern(platform))));
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

/** A refused request as `platform.api` answers it: the status and the error envelope. */
const refusedWith = (status: number, reason: string, retryable = false) => ({ status, body: refusal(status, reason, retryable) });


async function getJson(path: string, token: string = KEYS.alice) {
  return platform.api(path, { token });
}

/** A run's stream (GET). */
function follow(internId: string, runId: string, options: { token?: string; headers?: Record<string, string>; query?: string } = {}) {
  return followRun(platform, internId, runId, options);
}

/** The events of a finished stream, each with its id (`[DONE]` has none). */
async function eventsOf(stream: SseResponse): Promise<RunEvent[]> {
  await stream.all(20_000);
  return runEventsOf(stream);
}

/** The gateway's `interns_run_stream_readers` gauge. */
async function streamReaders(): Promise<number> {
  const text = await (await fetch(`${platform.gatewayUrl}/metrics`)).text();
  const line = text.split('\n').find((row) => row.startsWith('interns_run_stream_readers '));
  return Number(line?.split(' ')[1]);
}

function ids(stream: SseResponse): number[] {
  return stream.ids.filter((id): id is string => id !== undefined).map(Number);
}

async function invoke(
  internId: string,
  body: { input: string; session_id?: string },
  token: string = KEYS.alice,
): Promise<{ session_id: string; run_id: string; status: string }> {
  const response = await platform.api(`${API}/interns/${internId}/invoke`, { method: 'POST', token, json: body });
  expect(response.status).toBe(202);
  return response.body;
}

function runOf(internId: string, runId: string, token: string = KEYS.alice) {
  return runOfAs(platform, internId, runId, token);
}

function untilStatus(internId: string, runId: string, status: string, timeoutMs = 10_000) {
  return eventually(
    () => runOf(internId, runId),
    (run) => run.status === status,
    timeoutMs,
  );
}

describe('chunk ids and run ids', () => {
  it('numbers every chunk of a run from 1, on across the response after an answer, and names the run in X-Run-Id', async () => {
    const first = await prompt(platform, interns.ids, '/say hello\n/shell echo hi', { approvalMode: 'manual' });
    const runId = first.headers['x-run-id'] as string;
    expect(runId).toMatch(UUID);
    const paused = await readStream(first);
    expect(first.events.at(-1)).toBe('[DONE]');
    // Every chunk event has an id; [DONE] has none.
    expect(first.ids.slice(0, -1).every((id) => id !== undefined)).toBe(true);
    expect(first.ids.at(-1)).toBeUndefined();
    const firstIds = ids(first);
    expect(firstIds).toEqual(firstIds.map((_id, index) => index + 1));

    const second = asStream(await answer(platform, interns.ids, paused.sessionId, paused.toolCall?.id ?? '', 'allow_once'));
    expect(second.headers['x-run-id']).toBe(runId);
    const resumed = await readStream(second);
    expect(resumed.content).toBe('hi\n');
    const secondIds = ids(second);
    expect(secondIds).toEqual(secondIds.map((_id, index) => firstIds.length + index + 1));

    // The run's stream replays both responses as one sequence, with the same chunks and ids, and one [DONE].
    const replay = await eventsOf(asStream(await follow(interns.ids, runId)));
    const live = [...first.events.slice(0, -1).map((data, index) => ({ id: first.ids[index], data })), ...second.events.slice(0, -1).map((data, index) => ({ id: second.ids[index], data }))];
    expect(replay).toEqual([...live, { id: undefined, data: '[DONE]' }]);
  });

  it("names the run in invoke's run_id, and the steered run in a steered invoke and a steered chat", async () => {
    const started = await invoke(interns.ids, { input: '/sleep 1500\n/say done' });
    expect(started).toEqual({ session_id: expect.any(String), status: 'started', run_id: expect.stringMatching(UUID) });
    const steered = await invoke(interns.ids, { input: 'more', session_id: started.session_id });
    expect(steered).toEqual({ session_id: started.session_id, status: 'steered', run_id: started.run_id });

    // A chat may name its session: a second prompt on it while the run goes steers that run.
    const sessionId = randomUUID();
    const chatRun = await prompt(platform, interns.ids, '/sleep 1000\n/say done', { sessionId });
    const steeredChat = asJson(await chat(platform, interns.ids, promptBody('and more', { sessionId })));
    expect(steeredChat.status).toBe(202);
    expect(steeredChat.headers['x-run-id']).toBe(chatRun.headers['x-run-id']);
    expect((await readStream(chatRun)).finishReason).toBe('stop');
  });
});

describe('the run list and a run', () => {
  it('shows a run as its resource: origin, status, finish, model, usage, times', async () => {
    const started = await invoke(interns.list, { input: '/say listed' });
    const run = await untilStatus(interns.list, started.run_id, 'completed');
    expect(run).toStrictEqual({
      id: started.run_id,
      intern_id: interns.list,
      session_id: started.session_id,
      origin: 'invoke',
      status: 'completed',
      finish_reason: 'stop',
      model: 'local/scripted',
      usage: run.usage,
      open_question: null,
      created_at: expect.stringMatching(ISO_MS),
      ended_at: expect.stringMatching(ISO_MS),
    });
    expect(run.usage === null || typeof run.usage.total_tokens === 'number').toBe(true);
  });

  it('lists runs newest first by the list rules: limit, has_more, next_cursor, status and session_id filters', async () => {
    const first = await invoke(interns.list, { input: '/say one' });
    await untilStatus(interns.list, first.run_id, 'completed');
    const second = await invoke(interns.list, { input: '/say two', session_id: first.session_id });
    await untilStatus(interns.list, second.run_id, 'completed');
    const going = await invoke(interns.list, { input: '/sleep 3000\n/say three' });

    const page = await getJson(`${runsPath(interns.list)}?limit=2`);
    expect(page.status).toBe(200);
    expect(page.body.data.map((run: { id: string }) => run.id)).toEqual([going.run_id, second.run_id]);
    expect(page.body.has_more).toBe(true);
    const next = await getJson(`${runsPath(interns.list)}?limit=2&starting_after=${encodeURIComponent(page.body.next_cursor)}`);
    expect(next.body.data[0].id).toBe(first.run_id);

    const bySession = await getJson(`${runsPath(interns.list)}?session_id=${first.session_id}`);
    expect(bySession.body).toStrictEqual({ data: [expect.objectContaining({ id: second.run_id }), expect.objectContaining({ id: first.run_id })], has_more: false });
    const running = await getJson(`${runsPath(interns.list)}?status=running%2Cawaiting_input`);
    expect(running.body.data.map((run: { id: string }) => run.id)).toEqual([going.run_id]);

    for (const query of ['limit=0', 'limit=501', 'status=done', 'starting_after=forged', `starting_after=x&starting_after=y`]) {
      const refused = await getJson(`${runsPath(interns.list)}?${query}`);
      expect({ query, status: refused.status, body: refused.body }).toEqual({ query, ...refusedWith(400, 'invalid_body') });
    }
  });

  it('answers 404 for a run id that is not a uuid or names no run of the intern', async () => {
    const started = await invoke(interns.list, { input: '/say elsewhere' });
    for (const path of [runPath(interns.list, 'not-a-uuid'), runPath(interns.list, '00000000-0000-4000-8000-000000000000'), runPath(interns.ids, started.run_id)]) {
      const refused = await getJson(path);
      expect({ path, status: refused.status, body: refused.body }).toEqual({ path, ...refusedWith(404, 'not_found') });
    }
  });
});

describe("following a run's stream", () => {
  const counting = Array.from({ length: 40 }, (_value, index) => `/say ${index}`).join('\n');

  it('replays an ended run from the start, or after Last-Event-ID or starting_after, and ends with [DONE]', async () => {
    const started = await invoke(interns.follow, { input: '/say a\n/say b\n/say c' });
    await untilStatus(interns.follow, started.run_id, 'completed');
    const all = await eventsOf(asStream(await follow(interns.follow, started.run_id)));
    expect(all.at(-1)).toEqual({ id: undefined, data: '[DONE]' });
    const numbered = all.slice(0, -1);
    expect(numbered.map((event) => Number(event.id))).toEqual(numbered.map((_event, index) => index + 1));
    const chunks = numbered.map((event) => JSON.parse(event.data));
    expect(chunks[0].choices[0].delta).toEqual({ role: 'assistant' });
    expect(chunks.at(-1)).toMatchObject({ choices: [], session_id: started.session_id });

    const afterTwo = await eventsOf(asStream(await follow(interns.follow, started.run_id, { headers: { 'last-event-id': '2' } })));
    expect(afterTwo).toEqual(all.slice(2));
    const afterThree = await eventsOf(asStream(await follow(interns.follow, started.run_id, { query: '?starting_after=3' })));
    expect(afterThree).toEqual(all.slice(3));
    const pastTheEnd = await eventsOf(asStream(await follow(interns.follow, started.run_id, { query: '?starting_after=999' })));
    expect(pastTheEnd).toEqual([{ id: undefined, data: '[DONE]' }]);

    for (const headers of [{ 'last-event-id': 'x' }, { 'last-event-id': '-1' }]) {
      const refused = await follow(interns.follow, started.run_id, { headers });
      expect(refused instanceof SseResponse).toBe(false);
      expect({ status: (refused as { status: number }).status, body: (refused as { body: unknown }).body }).toEqual(refusedWith(400, 'invalid_body'));
    }
  });

  it('gives two readers of a going run identical sequences, with no gap or repeat at the seam between stored and live chunks', async () => {
    const started = await invoke(interns.follow, { input: counting });
    // One reader from the start while the run writes, one joining a moment later: both replay, then follow.
    const early = asStream(await follow(interns.follow, started.run_id));
    await early.until((events) => events.length >= 5);
    const late = asStream(await follow(interns.follow, started.run_id));
    const [earlyEvents, lateEvents] = await Promise.all([eventsOf(early), eventsOf(late)]);
    expect(lateEvents).toEqual(earlyEvents);
    const numbered = earlyEvents.slice(0, -1).map((event) => Number(event.id));
    expect(numbered).toEqual(numbered.map((_id, index) => index + 1));
    const content = earlyEvents.slice(0, -1).map((event) => JSON.parse(event.data).choices[0]?.delta?.content ?? '').join('');
    expect(content).toBe(Array.from({ length: 40 }, (_value, index) => String(index)).join('\n'));
  });

  it('resumes a background chat whose connection dropped: exactly the missing chunks, and the run was never cancelled', async () => {
    const dropped = asStream(await chat(platform, interns.follow, { ...promptBody(`/say start\n/sleep 800\n${counting}`), background: true }));
    const runId = dropped.headers['x-run-id'] as string;
    await dropped.until((events) => events.length >= 2);
    dropped.close();
    const seen = dropped.events.map((data, index) => ({ id: dropped.ids[index], data }));
    const lastSeen = seen.at(-1)?.id as string;

    const resumed = await eventsOf(asStream(await follow(interns.follow, runId, { headers: { 'last-event-id': lastSeen } })));
    const whole = await eventsOf(asStream(await follow(interns.follow, runId)));
    expect([...seen, ...resumed]).toEqual(whole);
    expect((await runOf(interns.follow, runId)).status).toBe('completed');
  });

  it('cancels a chat whose client leaves without background, as before', async () => {
    const leaving = asStream(await chat(platform, interns.follow, promptBody('/say start\n/sleep 5000\n/say never')));
    const runId = leaving.headers['x-run-id'] as string;
    await leaving.until((events) => events.length >= 2);
    leaving.close();
    const run = await untilStatus(interns.follow, runId, 'cancelled');
    expect(run.finish_reason).toBe('stop');
    const events = await eventsOf(asStream(await follow(interns.follow, runId)));
    expect(events.at(-1)?.data).toBe('[DONE]');
  });
});

describe('how many run streams one caller may hold', () => {
  it('refuses a caller a reader beyond RUN_STREAM_READERS_PER_CALLER with 429, and gives it back when one closes', async () => {
    const started = await invoke(interns.cancel, { input: '/say start\n/sleep 5000\n/say end' });
    const readers = await Promise.all(Array.from({ length: READERS_PER_CALLER }, () => follow(interns.cancel, started.run_id)));
    for (const reader of readers) await asStream(reader).until((events) => events.length >= 1);
    const refused = await follow(interns.cancel, started.run_id);
    expect(refused).not.toBeInstanceOf(SseResponse);
    expect({ status: (refused as { status: number }).status, body: (refused as { body: unknown }).body }).toEqual(refusedWith(429, 'rate_limited', true));
    expect((refused as { headers: Record<string, string> }).headers['retry-after']).toMatch(/^\d+$/);
    // Another caller is not affected.
    const org = asStream(await follow(interns.cancel, started.run_id, { token: KEYS.org }));
    asStream(readers[0]).close();
    // Alice's other readers and the organization key's: the closed one is given back.
    await eventually(streamReaders, (count) => count === READERS_PER_CALLER - 1 + 1);
    const again = asStream(await follow(interns.cancel, started.run_id));
    for (const reader of [...readers.slice(1), org, again]) asStream(reader).close();
    await platform.api(`${runPath(interns.cancel, started.run_id)}/cancel`, { method: 'POST', token: KEYS.alice, raw: '' });
    await untilStatus(interns.cancel, started.run_id, 'cancelled');
  });
});

describe('cancel', () => {
  it('cancels a going run (202, then cancelled with a stop finish for its readers), and refuses a second cancel with 409', async () => {
    const started = await invoke(interns.cancel, { input: '/say start\n/sleep 10000\n/say never' });
    const reader = asStream(await follow(interns.cancel, started.run_id));
    await reader.until((events) => events.length >= 2);
    expect(await streamReaders()).toBe(1);
    const cancelled = await platform.api(`${runPath(interns.cancel, started.run_id)}/cancel`, { method: 'POST', token: KEYS.alice, raw: '' });
    expect({ status: cancelled.status, body: cancelled.body }).toEqual({ status: 202, body: { cancelling: true } });
    const events = await eventsOf(reader);
    const chunks = events.slice(0, -1).map((event) => JSON.parse(event.data));
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
    expect(chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('')).not.toContain('never');
    const run = await untilStatus(interns.cancel, started.run_id, 'cancelled');
    expect(run.finish_reason).toBe('stop');
    // The reader's response ended with the run: the gateway follows nothing any more.
    expect(await eventually(streamReaders, (readers) => readers === 0)).toBe(0);

    const again = await platform.api(`${runPath(interns.cancel, started.run_id)}/cancel`, { method: 'POST', token: KEYS.alice, raw: '' });
    expect({ status: again.status, body: again.body }).toEqual(refusedWith(409, 'run_not_active'));
    const withBody = await platform.api(`${runPath(interns.cancel, started.run_id)}/cancel`, { method: 'POST', token: KEYS.alice, json: { now: true } });
    expect(withBody.status).toBe(400);
  });
});

describe('the question inbox', () => {
  /** A manual chat paused on a question; the client reads it to [DONE] and goes. */
  async function paused(text: string) {
    const stream = await prompt(platform, interns.inbox, text, { approvalMode: 'manual' });
    const summary = await readStream(stream);
    return { runId: stream.headers['x-run-id'] as string, sessionId: summary.sessionId, toolCallId: summary.toolCall?.id as string, summary };
  }

  const answerRun = (runId: string, body: unknown, token: string = KEYS.alice) =>
    platform.api(`${runPath(interns.inbox, runId)}/answer`, { method: 'POST', token, json: body });

  it('lists open questions oldest first, and answers a permission with no stream attached; the run resumes and can be followed', async () => {
    const asked = await paused('/shell echo inbox');
    const inbox = await getJson(`${API}/interns/${interns.inbox}/questions`);
    expect(inbox.status).toBe(200);
    expect(inbox.body.data).toContainEqual({
      run_id: asked.runId,
      session_id: asked.sessionId,
      tool_call_id: asked.toolCallId,
      arguments: permissionArguments('echo inbox'),
      expires_at: expect.stringMatching(ISO_MS),
    });
    expect((await runOf(interns.inbox, asked.runId)).status).toBe('awaiting_input');

    expect(await answerRun(asked.runId, { tool_call_id: asked.toolCallId, content: 'maybe' })).toMatchObject(refusedWith(400, 'invalid_body'));
    expect(await answerRun(asked.runId, { tool_call_id: 'call_unknown', content: 'allow_once' })).toMatchObject(refusedWith(404, 'interaction_unknown'));
    expect(await answerRun(asked.runId, { tool_call_id: asked.toolCallId, content: 'allow_once', extra: 1 })).toMatchObject(refusedWith(400, 'invalid_body'));
    const answered = await answerRun(asked.runId, { tool_call_id: asked.toolCallId, content: 'allow_once' });
    expect({ status: answered.status, body: answered.body }).toEqual({ status: 202, body: { answered: true } });
    expect(await answerRun(asked.runId, { tool_call_id: asked.toolCallId, content: 'allow_once' })).toMatchObject(refusedWith(409, 'interaction_not_pending'));

    const events = await eventsOf(asStream(await follow(interns.inbox, asked.runId)));
    const content = events.slice(0, -1).map((event) => JSON.parse(event.data).choices[0]?.delta?.content ?? '').join('');
    expect(content).toBe('inbox\n');
    expect((await untilStatus(interns.inbox, asked.runId, 'completed')).open_question).toBeNull();
    const after = await getJson(`${API}/interns/${interns.inbox}/questions`);
    expect(after.body.data.map((question: { run_id: string }) => question.run_id)).not.toContain(asked.runId);
  });

  it('answers an elicitation through the inbox', async () => {
    const asked = await paused('/ask What is your name?\n/say Thanks');
    expect(asked.summary.toolCall?.arguments).toEqual(elicitationArguments('What is your name?'));
    const answered = await answerRun(asked.runId, { tool_call_id: asked.toolCallId, content: elicitationReply.accept({ answer: 'Ada' }) });
    expect(answered.status).toBe(202);
    const run = await untilStatus(interns.inbox, asked.runId, 'completed');
    expect(run.finish_reason).toBe('stop');
  });
});

describe('expiry', () => {
  it('ends a run whose question nobody answered in time: expired, gone from the inbox, its answer refused', async () => {
    const stream = await prompt(platform, interns.expiry, '/shell echo late', { approvalMode: 'manual' });
    const summary = await readStream(stream);
    const runId = stream.headers['x-run-id'] as string;
    const run = await untilStatus(interns.expiry, runId, 'expired', INTERACTION_DEADLINE_MS + 5_000);
    expect(run).toMatchObject({ finish_reason: 'error', open_question: null, ended_at: expect.stringMatching(ISO_MS) });
    const inbox = await getJson(`${API}/interns/${interns.expiry}/questions`);
    expect(inbox.body).toEqual({ data: [] });
    const refused = await platform.api(`${runPath(interns.expiry, runId)}/answer`, {
      method: 'POST',
      token: KEYS.alice,
      json: { tool_call_id: summary.toolCall?.id, content: 'allow_once' },
    });
    expect({ status: refused.status, body: refused.body }).toEqual(refusedWith(409, 'interaction_not_pending'));
    // Its readers get the ending: the run_ended error chunk, the final chunk, [DONE].
    const events = await eventsOf(asStream(await follow(interns.expiry, runId)));
    expect(JSON.parse(events.at(-3)?.data ?? '{}').error.metadata.reason).toBe('run_ended');
  });
});

describe('who sees a run', () => {
  it('shows a run to the member who started it and to organization keys of its workspace; to anyone else it does not exist', async () => {
    const stream = await prompt(platform, interns.visibility, '/shell echo secret', { approvalMode: 'manual' });
    const summary = await readStream(stream);
    const runId = stream.headers['x-run-id'] as string;

    expect((await runOf(interns.visibility, runId, KEYS.org)).id).toBe(runId);
    const orgList = await getJson(runsPath(interns.visibility), KEYS.org);
    expect(orgList.body.data.map((run: { id: string }) => run.id)).toContain(runId);
    const orgInbox = await getJson(`${API}/interns/${interns.visibility}/questions`, KEYS.org);
    expect(orgInbox.body.data.map((question: { run_id: string }) => question.run_id)).toContain(runId);

    // Another member of the workspace sees the intern, not the run.
    for (const path of [runPath(interns.visibility, runId), `${runPath(interns.visibility, runId)}/stream`]) {
      const refused = await getJson(path, KEYS.bob);
      expect({ path, status: refused.status, body: refused.body }).toEqual({ path, ...refusedWith(404, 'not_found') });
    }
    expect((await getJson(runsPath(interns.visibility), KEYS.bob)).body).toEqual({ data: [], has_more: false });
    expect((await getJson(`${API}/interns/${interns.visibility}/questions`, KEYS.bob)).body).toEqual({ data: [] });
    const bobCancels = await platform.api(`${runPath(interns.visibility, runId)}/cancel`, { method: 'POST', token: KEYS.bob, raw: '' });
    expect(bobCancels.status).toBe(404);
    const bobAnswers = await platform.api(`${runPath(interns.visibility, runId)}/answer`, {
      method: 'POST',
      token: KEYS.bob,
      json: { tool_call_id: summary.toolCall?.id, content: 'allow_once' },
    });
    expect(bobAnswers.status).toBe(404);

    // Another workspace, another organization: not even the intern.
    for (const token of [KEYS.aliceOther, KEYS.readonly]) {
      for (const path of [runPath(interns.visibility, runId), runsPath(interns.visibility), `${API}/interns/${interns.visibility}/questions`]) {
        const refused = await getJson(path, token);
        expect({ token, path, status: refused.status, body: refused.body }).toEqual({ token, path, ...refusedWith(404, 'not_found') });
      }
    }
    // The organization key may cancel it.
    const orgCancels = await platform.api(`${runPath(interns.visibility, runId)}/cancel`, { method: 'POST', token: KEYS.org, raw: '' });
    expect(orgCancels.status).toBe(202);
    await untilStatus(interns.visibility, runId, 'cancelled');
  });
});
