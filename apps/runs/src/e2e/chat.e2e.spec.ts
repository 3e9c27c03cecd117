/**
 * End to end: the chat stream (CONTRACT section 6) through the real gateway, runs service and scripted model:
 * request rules, chunk shapes, questions and answers, deadlines, keepalive, disconnects, steering, and the
 * runs service's record of what the client saw.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { Platform, SseResponse } from '@interns/testing';
import { runTranscripts } from '@interns/runs-domain';
import type { SessionEvent } from '@interns/runs-domain';
import {
  API,
  answer,
  answerBody,
  asJson,
  asStream,
  chat,
  chatPath,
  checkStream,
  createIntern,
  createRunningIntern,
  elicitationArguments,
  elicitationReply,
  eventually,
  IDENTITIES,
  KEYS,
  permissionArguments,
  prompt,
  promptBody,
  readStream,
  refusal,
  sessionEvents,
  sessionRuns,
  sessionTransactions,
  sleep,
  untilRole,
} from '@interns/testing/e2e';
import type { StreamSummary } from '@interns/testing/e2e';

const INTERACTION_DEADLINE_MS = 1500;
let platform: Platform;

/** One intern per concern, so no test's runs (or open questions) count against another's. */
const interns = {
  rules: '',
  stopped: '',
  otherWorkspace: '',
  streams: '',
  approval: '',
  elicitation: '',
  deadline: '',
  keepalive: '',
  disconnect: '',
  steering: '',
  transcript: '',
  suspended: '',
};

beforeAll(async () => {
  platform = await Platform.start({
    env: {
      STREAM_HEARTBEAT_MS: '200',
      KEEPALIVE_INTERVAL_MS: '300',
      INTERACTION_DEADLINE_MS: String(INTERACTION_DEADLINE_MS),
      CHAT_TURNS_PER_MINUTE: '1000',
    },
  });
  await platform.applyIdentities(IDENTITIES);
  const running = ['rules', 'streams', 'approval', 'elicitation', 'deadline', 'keepalive', 'disconnect', 'steering', 'transcript', 'suspended'] as const;
  await Promise.all([
    ...running.map(async (name) => (interns[name] = await createRunningIntern(platform))),
    createIntern(platform).then((id) => (interns.stopped = id)),
    createRunningIntern(platform, KEYS.aliceOther).then((id) => (interns.otherWorkspace = id)),
  ]);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

/** Posts and expects a JSON answer (an error before the stream, or 202 steered). */
async function refused(internId: string, body: unknown, token: string = KEYS.alice) {
  return asJson(await chat(platform, internId, body, token));
}

type Paused = StreamSummary & { toolCall: NonNullable<StreamSummary['toolCall']> };

/** A response that ended with a question: finish `tool_calls`, usage null, the tool call present. */
function pausedOn(summary: StreamSummary): Paused {
  expect(summary.finishReason).toBe('tool_calls');
  expect(summary.usage).toBeNull();
  if (summary.toolCall === null) throw new Error(`no tool call in ${JSON.stringify(summary)}`);
  return { ...summary, toolCall: summary.toolCall };
}

/** Sends a prompt that provokes a question and returns the paused response. */
async function question(internId: string, text: string, options: { sessionId?: string; approvalMode?: 'manual' | 'self-drive' } = {}) {
  return pausedOn(await readStream(await prompt(platform, internId, text, options)));
}

async function answered(internId: string, paused: Paused, content: string, token: string = KEYS.alice) {
  return readStream(asStream(await answer(platform, internId, paused.sessionId, paused.toolCall.id, content, token)));
}

describe('request rules', () => {
  const user = (content: unknown) => ({ role: 'user', content });

  it('refuses a body without stream true', async () => {
    for (const body of [{ messages: [user('hi')] }, { stream: false, messages: [user('hi')] }, { stream: 'true', messages: [user('hi')] }]) {
      const response = await refused(interns.rules, body);
      expect(response.status).toBe(400);
      expect(response.body).toEqual(refusal(400, 'invalid_body'));
    }
  });

  it('refuses empty messages, an unknown role and an unknown approval mode', async () => {
    for (const body of [
      { stream: true, messages: [] },
      { stream: true },
      { stream: true, messages: [{ role: 'robot', content: 'hi' }] },
      { stream: true, messages: [user('hi')], approval_mode: 'auto' },
    ]) {
      const response = await refused(interns.rules, body);
      expect({ body, status: response.status }).toEqual({ body, status: 400 });
      expect(response.body).toEqual(refusal(400, 'invalid_body'));
    }
  });

  it('takes a last user message of 32000 characters and refuses 32001', async () => {
    const longest = 'a'.repeat(32000);
    const tooLong = await refused(interns.rules, promptBody(`${longest}a`));
    expect(tooLong.status).toBe(400);
    expect(tooLong.body).toEqual(refusal(400, 'invalid_body'));

    const fits = await readStream(await prompt(platform, interns.rules, longest));
    expect(fits.finishReason).toBe('stop');
    expect(fits.content).toBe(longest);
  });

  it('requires a session_id on a tool reply, and session ids of 1-256 characters', async () => {
    const { session_id: _dropped, ...withoutSession } = answerBody('s', 'call_x', 'allow_once');
    const noSession = await refused(interns.rules, withoutSession);
    expect(noSession.status).toBe(400);
    expect(noSession.body).toEqual(refusal(400, 'invalid_body'));

    for (const sessionId of ['', 's'.repeat(257)]) {
      const response = await refused(interns.rules, promptBody('hi', { sessionId }));
      expect(response.status).toBe(400);
      expect(response.body).toEqual(refusal(400, 'invalid_body'));
    }

    // A session id nobody used yet names a new session.
    const longestId = `${randomUUID()}-${'s'.repeat(256 - 37)}`;
    const named = await readStream(await prompt(platform, interns.rules, 'named', { sessionId: longestId }));
    expect(named.sessionId).toBe(longestId);
    expect(named.content).toBe('named');
  });

  it('accepts and ignores other OpenAI fields', async () => {
    const body = { ...promptBody('/say ignored them'), model: 'gpt-4o', temperature: 0.2, max_tokens: 5, user: 'someone', n: 1 };
    const summary = await readStream(asStream(await chat(platform, interns.rules, body)));
    expect(summary.content).toBe('ignored them');
    expect(summary.finishReason).toBe('stop');
  });

  it('reads content given as an array of text parts', async () => {
    const body = {
      stream: true,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: '/say par' }, { type: 'text', text: 'ts' }] },
      ],
    };
    const summary = await readStream(asStream(await chat(platform, interns.rules, body)));
    expect(summary.content).toBe('parts');
  });

  it('answers 415 without a JSON content type, 400 for bad JSON and 413 for a body over 1 MiB', async () => {
    const text = JSON.stringify(promptBody('hi'));
    const plain = await platform.api(chatPath(interns.rules), { token: KEYS.alice, raw: text, headers: { 'content-type': 'text/plain' } });
    expect(plain.status).toBe(415);
    expect(plain.body).toEqual(refusal(415, 'unsupported_media_type'));

    const broken = await platform.api(chatPath(interns.rules), {
      token: KEYS.alice,
      raw: '{"stream": true, "messages": [',
      headers: { 'content-type': 'application/json' },
    });
    expect(broken.status).toBe(400);
    expect(broken.body).toEqual(refusal(400, 'invalid_body'));

    const huge = JSON.stringify({ ...promptBody('hi'), padding: 'x'.repeat(1_048_577) });
    const tooLarge = await platform.api(chatPath(interns.rules), { token: KEYS.alice, raw: huge, headers: { 'content-type': 'application/json' } });
    expect(tooLarge.status).toBe(413);
    expect(tooLarge.body).toEqual(refusal(413, 'payload_too_large'));
  });

  it('answers 409 intern_not_running for an intern that is not running', async () => {
    const response = await refused(interns.stopped, promptBody('hi'));
    expect(response.status).toBe(409);
    expect(response.body).toEqual(refusal(409, 'intern_not_running'));
  });

  it('answers 404 for an intern id that is no uuid and for an intern of another workspace', async () => {
    const malformed = await refused('not-a-uuid', promptBody('hi'));
    expect(malformed.status).toBe(404);
    expect(malformed.body).toEqual(refusal(404, 'not_found'));

    const foreign = await refused(interns.otherWorkspace, promptBody('hi'));
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(refusal(404, 'not_found'));

    // The same intern is there for its own workspace: the 404 is about visibility only.
    const own = await readStream(await prompt(platform, interns.otherWorkspace, 'mine', { token: KEYS.aliceOther }));
    expect(own.content).toBe('mine');

    // Runs now holds the intern's lookup: the caller of another workspace still gets lifecycle's 404.
    const foreignAgain = await refused(interns.otherWorkspace, promptBody('hi'));
    expect({ status: foreignAgain.status, body: foreignAgain.body }).toEqual({ status: 404, body: refusal(404, 'not_found') });
  });

  it('answers 409 intern_not_running to the first prompt after a suspend, though runs held the intern as running', async () => {
    const before = await readStream(await prompt(platform, interns.suspended, '/say hi'));
    expect(before.content).toBe('hi');
    const suspended = await platform.api(`${API}/interns/${interns.suspended}/suspend`, { token: KEYS.alice, method: 'POST' });
    expect(suspended.status).toBe(200);
    // At once: lifecycle tells runs of the change before it answers the suspend.
    const response = await refused(interns.suspended, promptBody('hi'));
    expect({ status: response.status, body: response.body }).toEqual({ status: 409, body: refusal(409, 'intern_not_running') });
  });
});

describe('stream', () => {
  it('echoes text in a well-formed stream with usage, one chunk id per response', async () => {
    const first = await readStream(await prompt(platform, interns.streams, 'hello there'));
    expect(first).toMatchObject({ finishReason: 'stop', content: 'hello there', toolCall: null, error: null });
    expect(first.usage?.completion_tokens).toBeGreaterThan(0);

    const second = await readStream(await prompt(platform, interns.streams, 'hello again', { sessionId: first.sessionId }));
    expect(second.sessionId).toBe(first.sessionId);
    expect(second.id).not.toBe(first.id);
    expect(second.content).toBe('hello again');
  });

  it('streams /say lines as lines', async () => {
    const summary = await readStream(await prompt(platform, interns.streams, '/say one\n/say two\nthree'));
    expect(summary.content).toBe('one\ntwo\nthree');
    expect(summary.finishReason).toBe('stop');
  });

  it('records a turn without tool calls in two transactions: the start, and the turn with its ending', async () => {
    const summary = await readStream(await prompt(platform, interns.streams, '/say hi'));
    expect(summary.content).toBe('hi');
    const transactions = await eventually(
      () => sessionTransactions(platform, summary.sessionId),
      (groups) => groups.length === 2,
    );
    expect(transactions).toEqual([
      ['SessionOpened', 'RunStarted'],
      ['ModelRequested', 'OutputProduced', 'UsageRecorded', 'RunFinished'],
    ]);
    // The final chunk's usage still counts the turn written with the ending.
    expect(summary.usage?.completion_tokens).toBeGreaterThan(0);
  });

  it('runs /shell in self-drive in the intern workspace and streams its output', async () => {
    const workspace = realpathSync(join(platform.env.DATA_DIR, 'workspaces', interns.streams));
    // The sandbox shows the workspace at /workspace (CONTRACT section 15); the file lands in the host's copy.
    const summary = await readStream(await prompt(platform, interns.streams, '/shell pwd; echo here > where.txt'));
    expect(summary.content).toBe('/workspace\n');
    expect(readFileSync(join(workspace, 'where.txt'), 'utf8')).toBe('here\n');
    expect(summary.finishReason).toBe('stop');
    expect(summary.toolCall).toBeNull();
    expect(summary.usage).not.toBeNull();
  });
});

describe('manual approval', () => {
  it('asks permission before the shell, and allow_once runs it on a new response', async () => {
    const paused = await question(interns.approval, '/shell echo hi', { approvalMode: 'manual' });
    expect(paused.toolCall.arguments).toEqual(permissionArguments('echo hi'));
    expect(paused.content).toBe('');

    const resumed = await answered(interns.approval, paused, 'allow_once');
    expect(resumed.id).not.toBe(paused.id);
    expect(resumed.sessionId).toBe(paused.sessionId);
    expect(resumed.finishReason).toBe('stop');
    expect(resumed.content).toBe('hi\n');
  });

  it('streams a refusal for reject_once', async () => {
    const paused = await question(interns.approval, '/shell echo hi', { approvalMode: 'manual' });
    const resumed = await answered(interns.approval, paused, 'reject_once');
    expect(resumed.finishReason).toBe('stop');
    expect(resumed.content).toBe('Permission to run `echo hi` was refused.');
  });

  it('does not ask again in the session after allow_always', async () => {
    const paused = await question(interns.approval, '/shell echo one', { approvalMode: 'manual' });
    const resumed = await answered(interns.approval, paused, 'allow_always');
    expect(resumed.content).toBe('one\n');

    const next = await readStream(await prompt(platform, interns.approval, '/shell echo two', { sessionId: paused.sessionId, approvalMode: 'manual' }));
    expect(next.finishReason).toBe('stop');
    expect(next.toolCall).toBeNull();
    expect(next.content).toBe('two\n');
  });

  it('ends the run with stop on cancel', async () => {
    const paused = await question(interns.approval, '/shell echo never\n/say after', { approvalMode: 'manual' });
    const ended = await answered(interns.approval, paused, 'cancel');
    expect(ended.finishReason).toBe('stop');
    expect(ended.content).not.toContain('never');
    expect(ended.content).not.toContain('after');

    // The run is over: a new prompt on the session starts a run instead of steering.
    const next = await readStream(await prompt(platform, interns.approval, 'still here', { sessionId: paused.sessionId }));
    expect(next.content).toBe('still here');
  });
});

describe('elicitation', () => {
  it('asks the question and continues with the accepted content', async () => {
    const paused = await question(interns.elicitation, '/ask name?\n/say thanks');
    expect(paused.toolCall.arguments).toEqual(elicitationArguments('name?'));

    const resumed = await answered(interns.elicitation, paused, elicitationReply.accept({ answer: 'Ada' }));
    expect(resumed.finishReason).toBe('stop');
    expect(resumed.content).toContain('Ada');
    expect(resumed.content.endsWith('thanks')).toBe(true);
  });

  it('continues after a decline', async () => {
    const paused = await question(interns.elicitation, '/ask name?\n/say thanks anyway');
    const resumed = await answered(interns.elicitation, paused, elicitationReply.decline());
    expect(resumed.finishReason).toBe('stop');
    expect(resumed.content).toContain('decline');
    expect(resumed.content.endsWith('thanks anyway')).toBe(true);
  });

  it('refuses a permission answer that was not offered, and the question stays open', async () => {
    const paused = await question(interns.elicitation, '/shell echo ok', { approvalMode: 'manual' });
    const maybe = asJson(await answer(platform, interns.elicitation, paused.sessionId, paused.toolCall.id, 'maybe'));
    expect(maybe.status).toBe(400);
    expect(maybe.body).toEqual(refusal(400, 'invalid_body'));

    const resumed = await answered(interns.elicitation, paused, 'allow_once');
    expect(resumed.content).toBe('ok\n');
  });

  it('refuses elicitation answers that do not fit, and the question stays open', async () => {
    const paused = await question(interns.elicitation, '/ask name?\n/say bye');
    for (const bad of [
      elicitationReply.accept({}),
      elicitationReply.accept({ answer: 5 }),
      '{"action": "accept", "content":',
      JSON.stringify({ action: 'maybe' }),
      'allow_once',
    ]) {
      const response = asJson(await answer(platform, interns.elicitation, paused.sessionId, paused.toolCall.id, bad));
      expect({ bad, status: response.status }).toEqual({ bad, status: 400 });
      expect(response.body).toEqual(refusal(400, 'invalid_body'));
    }
    const resumed = await answered(interns.elicitation, paused, elicitationReply.accept({ answer: 'Grace' }));
    expect(resumed.content).toContain('Grace');
    expect(resumed.content.endsWith('bye')).toBe(true);
  });

  it('answers 404 interaction_unknown for a tool_call_id the session never issued', async () => {
    const paused = await question(interns.elicitation, '/ask name?');
    const unknown = asJson(await answer(platform, interns.elicitation, paused.sessionId, 'call_0123456789abcdef', elicitationReply.decline()));
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(refusal(404, 'interaction_unknown'));
    expect((await answered(interns.elicitation, paused, elicitationReply.cancel())).finishReason).toBe('stop');
  });

  it('answers 409 interaction_not_pending to a second answer', async () => {
    const paused = await question(interns.elicitation, '/ask name?');
    expect((await answered(interns.elicitation, paused, elicitationReply.decline())).finishReason).toBe('stop');
    const again = asJson(await answer(platform, interns.elicitation, paused.sessionId, paused.toolCall.id, elicitationReply.decline()));
    expect(again.status).toBe(409);
    expect(again.body).toEqual(refusal(409, 'interaction_not_pending'));
  });

  it("answers 404 not_found to another member answering a session that is not theirs", async () => {
    const paused = await question(interns.elicitation, '/ask name?\n/say mine');
    const bob = asJson(await answer(platform, interns.elicitation, paused.sessionId, paused.toolCall.id, elicitationReply.decline(), KEYS.bob));
    expect(bob.status).toBe(404);
    expect(bob.body).toEqual(refusal(404, 'not_found'));

    const resumed = await answered(interns.elicitation, paused, elicitationReply.accept({ answer: 'Alice' }));
    expect(resumed.content.endsWith('mine')).toBe(true);
  });
});

describe('interaction deadline', () => {
  it('answers 409 interaction_not_pending once the question expired, and the run is over', async () => {
    const paused = await question(interns.deadline, '/ask anyone there?');
    await sleep(INTERACTION_DEADLINE_MS + 700);
    const late = asJson(await answer(platform, interns.deadline, paused.sessionId, paused.toolCall.id, elicitationReply.accept({ answer: 'yes' })));
    expect(late.status).toBe(409);
    expect(late.body).toEqual(refusal(409, 'interaction_not_pending'));

    const next = await readStream(await prompt(platform, interns.deadline, 'new run', { sessionId: paused.sessionId }));
    expect(next.content).toBe('new run');
  });
});

describe('keepalive', () => {
  it('writes a keepalive comment while the run is silent', async () => {
    const stream = await prompt(platform, interns.keepalive, '/sleep 1200\n/say done');
    // The wire in arrival order: comments and events are kept apart by the client.
    let wire = '';
    stream.incoming.on('data', (text: string) => (wire += text));
    const summary = await readStream(stream);
    expect(summary.content).toBe('done');
    expect(stream.comments).toContain('keepalive');
    expect(wire).toContain(': keepalive\n\n');
    expect(wire.indexOf(': keepalive')).toBeLessThan(wire.indexOf('"content":"done"'));
  });
});

describe('disconnect', () => {
  it('cancels the run when the client leaves mid-stream', async () => {
    const sessionId = `leaver-${randomUUID()}`;
    const stream = await prompt(platform, interns.disconnect, '/sleep 3000\n/say late', { sessionId });
    await untilRole(stream);
    stream.close();
    const runs = await eventually(() => sessionRuns(platform, sessionId), (rows) => rows[0]?.status !== 'active', 3_000);
    expect(runs).toEqual([{ status: 'cancelled', finish_reason: 'cancelled:client_disconnected' }]);

    // Not steered into the old run: a new response.
    const next = await chat(platform, interns.disconnect, promptBody('/say again', { sessionId }));
    expect(next).toBeInstanceOf(SseResponse);
    const summary = await readStream(asStream(next));
    expect(summary.content).toBe('again');
    expect(summary.sessionId).toBe(sessionId);
  });

  it('keeps the run when the client leaves after the [DONE] that follows tool_calls', async () => {
    const stream = await prompt(platform, interns.disconnect, '/ask stay?\n/say stayed');
    await stream.until((events) => events.includes('[DONE]'));
    stream.close();
    await stream.ended;
    const paused = pausedOn(checkStream(stream));
    await sleep(300);
    const resumed = await answered(interns.disconnect, paused, elicitationReply.accept({ answer: 'yes' }));
    expect(resumed.finishReason).toBe('stop');
    expect(resumed.content.endsWith('stayed')).toBe(true);
  });
});

describe('steering', () => {
  it('joins a prompt to the going run: 202 steered, and the first response streams both', async () => {
    const sessionId = randomUUID();
    const stream = await prompt(platform, interns.steering, '/sleep 1500\n/say first', { sessionId });
    await untilRole(stream);
    const steered = await refused(interns.steering, promptBody('/say second', { sessionId }));
    expect(steered.status).toBe(202);
    expect(steered.body).toStrictEqual({ session_id: sessionId, status: 'steered' });

    const summary = await readStream(stream);
    expect(summary.finishReason).toBe('stop');
    expect(summary.sessionId).toBe(sessionId);
    expect(summary.content).toContain('first');
    expect(summary.content).toContain('second');
    expect(summary.content.indexOf('first')).toBeLessThan(summary.content.indexOf('second'));
  });

  it('steers a run paused on a question; the prompt is handled after the answer', async () => {
    const sessionId = randomUUID();
    const paused = await question(interns.steering, '/ask ready?\n/say go', { sessionId });
    const steered = await refused(interns.steering, promptBody('/say extra', { sessionId }));
    expect(steered.status).toBe(202);
    expect(steered.body).toStrictEqual({ session_id: sessionId, status: 'steered' });

    const resumed = await answered(interns.steering, paused, elicitationReply.accept({ answer: 'yes' }));
    expect(resumed.finishReason).toBe('stop');
    expect(resumed.content.indexOf('go')).toBeGreaterThanOrEqual(0);
    expect(resumed.content.endsWith('extra')).toBe(true);
  });
});

describe('transcript', () => {
  it('records exactly the content and questions the client saw', async () => {
    const sessionId = `transcript-${randomUUID()}`;
    const text = '/say alpha\n/shell echo beta\n/ask gamma?\n/say delta';
    const first = await question(interns.transcript, text, { sessionId, approvalMode: 'manual' });
    expect(first.toolCall.arguments).toEqual(permissionArguments('echo beta'));
    const second = pausedOn(await answered(interns.transcript, first, 'allow_once'));
    expect(second.toolCall.arguments).toEqual(elicitationArguments('gamma?'));
    const third = await answered(interns.transcript, second, elicitationReply.accept({ answer: 'omega' }));
    expect(third.finishReason).toBe('stop');
    const seen = [first, second, third];
    expect(seen.map((summary) => summary.sessionId)).toEqual([sessionId, sessionId, sessionId]);
    expect(new Set(seen.map((summary) => summary.id)).size).toBe(3);
    expect(first.content).toBe('alpha');
    expect(second.content).toContain('beta');
    expect(third.content.endsWith('delta')).toBe(true);

    const rows = await sessionEvents(platform, sessionId);
    const transcripts = runTranscripts(rows as SessionEvent[]);
    expect(transcripts).toHaveLength(1);
    const [run] = transcripts;
    expect(run.prompts).toEqual([text]);
    expect(run.content).toBe(seen.map((summary) => summary.content).join(''));
    expect(run.questions.map((asked) => asked.toolCallId)).toEqual([first.toolCall.id, second.toolCall.id]);
    expect(run.questions.map((asked) => asked.question)).toEqual([first.toolCall.arguments, second.toolCall.arguments]);
    expect(run.ending).toBe('stop');
  });
});

describe('metrics', () => {
  it('counts relayed streams on the gateway and run durations on the runs service', async () => {
    const metricsOf = async (port: string) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const gateway = await metricsOf(platform.env.GATEWAY_PORT);
    expect(gateway).toMatch(/^interns_chat_stream_endings_total\{outcome="done"\} [1-9]\d*$/m);
    expect(gateway).toMatch(/^interns_chat_streams_active 0$/m);
    const runs = await metricsOf(platform.env.RUNS_PORT);
    expect(runs).toMatch(/^interns_run_duration_seconds_count\{ending="stop"\} [1-9]\d*$/m);
    expect(runs).toMatch(/^interns_questions_open \d+$/m);
  });
});
