/**
 * End to end: runs under faults and limits (CONTRACT sections 2, 6, 7, 10). Runs the intern ends (410
 * `run_ended`), a runs process killed mid-stream (502 `stream_severed`) and the runs it orphans, two runs
 * replicas, MAX_RUNS_PER_INTERN, the chat turn limiter, invoke, and the model providers (no key configured;
 * an OpenAI-compatible provider faked in this process). One platform per set of environment settings.
 */
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Platform } from '@interns/testing';
import type { JsonAnswer, SseResponse } from '@interns/testing';
import {
  answer,
  API,
  asJson,
  asStream,
  chat,
  CHUNK_ID,
  createIntern,
  createRunningIntern,
  elicitationReply,
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
  untilRole,
} from '@interns/testing/e2e';
import type { StreamSummary } from '@interns/testing/e2e';

/** The relay declares a link severed after 3 missed heartbeats: about 600 ms here. */
const HEARTBEAT_ENV = { STREAM_HEARTBEAT_MS: '200' };
const SCRIPTED = 'local/scripted';
const PROVIDER_MODEL = 'acme/gpt-x';

async function startPlatform(env: Record<string, string>): Promise<Platform> {
  const platform = await Platform.start({ env: { ...HEARTBEAT_ENV, ...env } });
  await platform.applyIdentities(IDENTITIES);
  return platform;
}

function invoke(platform: Platform, internId: string, body: unknown, token: string = KEYS.alice) {
  return platform.api(`${API}/interns/${internId}/invoke`, { token, json: body });
}

/** Creates and provisions an intern of `model`, returning its id once it is `running`. */
async function createRunningModelIntern(platform: Platform, model: string): Promise<string> {
  const created = await platform.api(`${API}/interns`, {
    token: KEYS.alice,
    json: { name: `model-${randomUUID().slice(0, 8)}`, model, provision: true },
  });
  if (created.status !== 201) throw new Error(`create answered ${created.status}: ${created.text}`);
  const id = created.body.id as string;
  await eventually(
    () => platform.api(`${API}/interns/${id}`, { token: KEYS.alice }),
    (got) => got.body?.status === 'running',
    20_000,
  );
  return id;
}

function toolCallIdOf(summary: StreamSummary): string {
  if (summary.toolCall === null) throw new Error(`expected a tool call, got ${JSON.stringify(summary)}`);
  return summary.toolCall.id;
}

/** Waits until the session has no run going, and returns its runs. */
function settledRuns(platform: Platform, sessionId: string, count: number, timeoutMs = 8_000) {
  return eventually(
    () => sessionRuns(platform, sessionId),
    (rows) => rows.length === count && rows.every((row) => row.status !== 'active'),
    timeoutMs,
  );
}

/** A response ended by the intern: the error finish 410 `run_ended`, then the final chunk (no usage reported). */
function expectRunEnded(summary: StreamSummary, sessionId: string): void {
  expect(summary.finishReason).toBe('error');
  expect(summary.error).toEqual({ code: 410, message: expect.any(String), metadata: { reason: 'run_ended', retryable: false } });
  expect(summary.sessionId).toBe(sessionId);
  expect(summary.usage).toBeNull();
}

/**
 * A response whose run's process vanished: role chunk, the error finish 502 `stream_severed`, the final chunk
 * (usage null), `[DONE]`. The gateway writes the last two itself, so only `created` may differ from the role chunk.
 */
function expectSevered(stream: SseResponse, sessionId: string): void {
  expect(stream.events[stream.events.length - 1]).toBe('[DONE]');
  expect(stream.events.filter((event) => event === '[DONE]')).toHaveLength(1);
  const chunks = stream.chunks;
  const id = chunks[0]?.id;
  expect(id).toMatch(CHUNK_ID);
  const head = { id, object: 'chat.completion.chunk', created: expect.any(Number), model: SCRIPTED };
  expect(chunks).toEqual([
    { ...head, choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] },
    {
      ...head,
      choices: [{ index: 0, delta: {}, finish_reason: 'error' }],
      error: { code: 502, message: expect.any(String), metadata: { reason: 'stream_severed', retryable: true } },
    },
    { ...head, choices: [], session_id: sessionId, usage: null },
  ]);
  for (const chunk of chunks) expect(Number.isInteger(chunk.created)).toBe(true);
}

function expectBusy(refused: JsonAnswer): void {
  expect({ status: refused.status, body: refused.body }).toEqual({ status: 409, body: refusal(409, 'busy', true) });
  expect(refused.headers['retry-after']).toMatch(/^\d+$/);
  expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
}

function expectRateLimited(refused: { status: number; body: unknown }, retryAfter: string | undefined | null): void {
  expect({ status: refused.status, body: refused.body }).toEqual({ status: 429, body: refusal(429, 'rate_limited', true) });
  expect(retryAfter).toMatch(/^\d+$/);
  expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(retryAfter)).toBeLessThanOrEqual(60);
}

describe('a platform with MAX_RUNS_PER_INTERN=2', () => {
  let platform: Platform;

  beforeAll(async () => {
    platform = await startPlatform({ MAX_RUNS_PER_INTERN: '2' });
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
  });

  describe('runs the intern ends while a client streams', () => {
    it('suspend: 410 run_ended (not retryable), the final chunk, [DONE]', async () => {
      const internId = await createRunningIntern(platform);
      const sessionId = randomUUID();
      const stream = await prompt(platform, internId, '/sleep 20000', { sessionId });
      await untilRole(stream);

      const suspended = await platform.api(`${API}/interns/${internId}/suspend`, { token: KEYS.alice, method: 'POST' });
      expect({ status: suspended.status, body: suspended.body }).toEqual({ status: 200, body: { suspended: true } });
      expectRunEnded(await readStream(stream, 5_000), sessionId);
      expect(await sessionRuns(platform, sessionId)).toEqual([{ status: 'cancelled', finish_reason: 'cancelled:intern_suspended' }]);
    });

    it('delete: 410 run_ended (not retryable), the final chunk, [DONE]', async () => {
      const internId = await createRunningIntern(platform);
      const sessionId = randomUUID();
      const stream = await prompt(platform, internId, '/sleep 20000', { sessionId });
      await untilRole(stream);

      const deleted = await platform.api(`${API}/interns/${internId}`, { token: KEYS.alice, method: 'DELETE' });
      expect({ status: deleted.status, body: deleted.body }).toEqual({ status: 202, body: { deleting: true } });
      expectRunEnded(await readStream(stream, 5_000), sessionId);
      expect(await sessionRuns(platform, sessionId)).toEqual([{ status: 'cancelled', finish_reason: 'cancelled:intern_deleted' }]);
    });
  });

  it('MAX_RUNS_PER_INTERN: 409 busy while two runs go (a paused one counts); a run starts once one ended', async () => {
    const internId = await createRunningIntern(platform);
    const paused = await readStream(await prompt(platform, internId, '/ask hold on?'));
    expect(paused.finishReason).toBe('tool_calls');
    const sleeping = await prompt(platform, internId, '/sleep 2500\n/say slept');
    await untilRole(sleeping);
    expectBusy(asJson(await chat(platform, internId, promptBody('/say third'))));

    // Answered, the paused run finishes; a second sleeping run then fits beside the first, and a third does not.
    const reply = elicitationReply.accept({ answer: 'go' });
    const answered = await readStream(asStream(await answer(platform, internId, paused.sessionId, toolCallIdOf(paused), reply)));
    expect(answered.finishReason).toBe('stop');
    const second = await prompt(platform, internId, '/sleep 2500\n/say slept too');
    await untilRole(second);
    expectBusy(asJson(await chat(platform, internId, promptBody('/say third'))));

    expect(await readStream(sleeping, 10_000)).toMatchObject({ finishReason: 'stop', content: 'slept' });
    expect(await readStream(second, 10_000)).toMatchObject({ finishReason: 'stop', content: 'slept too' });
    expect(await readStream(await prompt(platform, internId, '/say again'))).toMatchObject({ finishReason: 'stop', content: 'again' });
  }, 30_000);

  describe('invoke', () => {
    it('answers 202 started at once, steered while the run goes, started again in the same session once it ended', async () => {
      const internId = await createRunningIntern(platform);
      const before = Date.now();
      const started = await invoke(platform, internId, { input: '/sleep 3000\n/say slept' });
      expect(Date.now() - before).toBeLessThan(2_000);
      expect({ status: started.status, body: started.body }).toEqual({
        status: 202,
        body: { session_id: expect.any(String), status: 'started', run_id: expect.any(String) },
      });
      const sessionId = started.body.session_id as string;
      expect(sessionId.length).toBeGreaterThan(0);

      const steered = await invoke(platform, internId, { input: '/say steered', session_id: sessionId });
      // The run it joined: the one invoke started.
      expect({ status: steered.status, body: steered.body }).toEqual({ status: 202, body: { session_id: sessionId, status: 'steered', run_id: started.body.run_id } });
      expect(await settledRuns(platform, sessionId, 1)).toEqual([{ status: 'finished', finish_reason: 'stop' }]);
      const events = await sessionEvents(platform, sessionId);
      const outputs = events.filter((event) => event.type === 'OutputProduced').map((event) => (event.data as { text: string }).text);
      expect(outputs.join('')).toBe('sleptsteered');

      const again = await invoke(platform, internId, { input: '/say again', session_id: sessionId });
      expect({ status: again.status, body: again.body }).toEqual({ status: 202, body: { session_id: sessionId, status: 'started', run_id: expect.any(String) } });
      expect(await settledRuns(platform, sessionId, 2)).toEqual([
        { status: 'finished', finish_reason: 'stop' },
        { status: 'finished', finish_reason: 'stop' },
      ]);
    }, 20_000);

    it("takes back only its own caller's invoke sessions on the same intern: anything else is 404 not_found", async () => {
      const internId = await createRunningIntern(platform);
      const otherInternId = await createRunningIntern(platform);
      const own = await invoke(platform, internId, { input: '/sleep 2000' });
      expect(own.status).toBe(202);
      const invokeSession = own.body.session_id as string;
      const chatSession = (await readStream(await prompt(platform, internId, '/say chatting'))).sessionId;

      const foreign: [string, string, string, string][] = [
        ['a chat session', KEYS.alice, internId, chatSession],
        ['another member', KEYS.bob, internId, invokeSession],
        ['an organization key', KEYS.org, internId, invokeSession],
        ['another intern', KEYS.alice, otherInternId, invokeSession],
        ['an unknown session', KEYS.alice, internId, randomUUID()],
      ];
      for (const [what, token, intern, sessionId] of foreign) {
        const refused = await invoke(platform, intern, { input: '/say mine now', session_id: sessionId }, token);
        expect({ what, status: refused.status, body: refused.body }).toEqual({ what, status: 404, body: refusal(404, 'not_found') });
      }
      // Its owner still steers it.
      const steered = await invoke(platform, internId, { input: '/say still mine', session_id: invokeSession });
      expect(steered.body).toEqual({ session_id: invokeSession, status: 'steered', run_id: expect.any(String) });
    });

    it('refuses a bad body with 400 invalid_body, and an intern that is not running with 409', async () => {
      const internId = await createRunningIntern(platform);
      const bad: [string, unknown][] = [
        ['an unknown field', { input: '/say hi', temperature: 1 }],
        ['an empty input', { input: '' }],
        ['an input of 32001 chars', { input: 'a'.repeat(32_001) }],
        ['no input', {}],
        ['a number input', { input: 5 }],
        ['an empty session_id', { input: '/say hi', session_id: '' }],
      ];
      for (const [what, body] of bad) {
        const refused = await invoke(platform, internId, body);
        expect({ what, status: refused.status, body: refused.body }).toEqual({ what, status: 400, body: refusal(400, 'invalid_body') });
      }
      const longest = await invoke(platform, internId, { input: 'a'.repeat(32_000) });
      expect({ status: longest.status, body: longest.body }).toEqual({ status: 202, body: { session_id: expect.any(String), status: 'started', run_id: expect.any(String) } });

      const stoppedId = await createIntern(platform);
      const refused = await invoke(platform, stoppedId, { input: '/say hi' });
      expect({ status: refused.status, body: refused.body }).toEqual({ status: 409, body: refusal(409, 'intern_not_running') });
    });

    it("self-drives: the shell writes into the intern's workspace, a question is declined by the fallback", async () => {
      const internId = await createRunningIntern(platform);
      const shell = await invoke(platform, internId, { input: '/shell echo ok > out.txt' });
      expect(shell.body).toEqual({ session_id: expect.any(String), status: 'started', run_id: expect.any(String) });
      expect(await settledRuns(platform, shell.body.session_id, 1)).toEqual([{ status: 'finished', finish_reason: 'stop' }]);
      expect(await readFile(join(platform.env.DATA_DIR, 'workspaces', internId, 'out.txt'), 'utf8')).toBe('ok\n');

      const asked = await invoke(platform, internId, { input: '/ask what now?' });
      expect(asked.body).toEqual({ session_id: expect.any(String), status: 'started', run_id: expect.any(String) });
      expect(await settledRuns(platform, asked.body.session_id, 1)).toEqual([{ status: 'finished', finish_reason: 'stop' }]);
      const answers = (await sessionEvents(platform, asked.body.session_id)).filter((event) => event.type === 'QuestionAnswered');
      expect(answers).toEqual([
        {
          type: 'QuestionAnswered',
          data: expect.objectContaining({ by: 'fallback', answer: { kind: 'elicitation', answer: { action: 'decline' } } }),
        },
      ]);
    });
  });

  it('a runs process killed mid-stream: 502 stream_severed; once back, its orphaned runs do not hold the run limit', async () => {
    const internId = await createRunningIntern(platform);
    const sessions = [randomUUID(), randomUUID()];
    const streams = await Promise.all(sessions.map((sessionId) => prompt(platform, internId, '/sleep 20000', { sessionId })));
    await Promise.all(streams.map((stream) => untilRole(stream)));

    const killedAt = Date.now();
    await platform.stopService('runs', 'SIGKILL');
    await Promise.all(streams.map((stream) => stream.all(8_000)));
    expect(Date.now() - killedAt).toBeLessThan(4_000);
    streams.forEach((stream, index) => expectSevered(stream, sessions[index]));

    await platform.startService('runs');
    // Both runs are still recorded as going (at MAX_RUNS_PER_INTERN=2 a new run fits only once they are found
    // orphaned), unless the restarted replica took longer than the reconciler's start grace (5 s after the runs
    // began) to come up, on a loaded machine: then its first reconcile round has ended both already.
    const active = await query<{ n: number }>(platform, `SELECT count(*)::int AS n FROM runs.runs WHERE intern_id = $1 AND status IN ('running', 'awaiting_input')`, [
      internId,
    ]);
    expect([[{ n: 2 }], [{ n: 0 }]]).toContainEqual(active);
    expect(await readStream(await prompt(platform, internId, '/say back again'))).toMatchObject({ finishReason: 'stop', content: 'back again' });
    for (const sessionId of sessions) {
      expect(await sessionRuns(platform, sessionId)).toEqual([{ status: 'cancelled', finish_reason: 'cancelled:owner_lost' }]);
    }
    // A severed session goes on with a new run.
    expect(await readStream(await prompt(platform, internId, '/say resumed', { sessionId: sessions[0] }))).toMatchObject({
      finishReason: 'stop',
      content: 'resumed',
      sessionId: sessions[0],
    });
  }, 40_000);

  it('a runs process frozen mid-stream: 502 stream_severed; once it thaws, the run ends as its client left', async () => {
    const internId = await createRunningIntern(platform);
    const sessionId = randomUUID();
    const stream = await prompt(platform, internId, '/sleep 20000', { sessionId });
    await untilRole(stream);
    const runs = platform.process('runs');
    process.kill(runs.pid, 'SIGSTOP');
    try {
      // No heartbeat for 3 intervals (and the broker confirms none is on its way): the gateway severs.
      await stream.all(8_000);
      expectSevered(stream, sessionId);
    } finally {
      process.kill(runs.pid, 'SIGCONT');
    }
    // The gateway told the run's owner its client is gone; thawed, it reads that and ends the run.
    await eventually(
      () => sessionRuns(platform, sessionId),
      (rows) => rows[0]?.status === 'cancelled',
      10_000,
    );
    expect(await sessionRuns(platform, sessionId)).toEqual([{ status: 'cancelled', finish_reason: 'cancelled:client_disconnected' }]);
  }, 30_000);

  it('a gateway stopped (SIGTERM) mid-stream ends the stream with 502 stream_severed and cancels the run', async () => {
    const internId = await createRunningIntern(platform);
    const sessionId = randomUUID();
    const stream = await prompt(platform, internId, '/sleep 20000', { sessionId });
    await untilRole(stream);
    await platform.stopService('gateway');
    await stream.all(8_000);
    expectSevered(stream, sessionId);
    await platform.startService('gateway');
    await eventually(
      () => sessionRuns(platform, sessionId),
      (runs) => runs[0]?.status === 'cancelled',
    );
    expect(await sessionRuns(platform, sessionId)).toEqual([{ status: 'cancelled', finish_reason: 'cancelled:client_disconnected' }]);
  }, 30_000);

  it('a runs process stopped (SIGTERM) mid-stream ends its streams with a retryable 500 and records the runs cancelled', async () => {
    const internId = await createRunningIntern(platform);
    const sessionId = randomUUID();
    const stream = await prompt(platform, internId, '/sleep 20000', { sessionId });
    await untilRole(stream);
    await platform.stopService('runs');
    const summary = await readStream(stream);
    await platform.startService('runs');
    expect(summary.finishReason).toBe('error');
    expect(summary.error).toEqual(refusal(500, 'internal_error', true).error);
    expect(await sessionRuns(platform, sessionId)).toEqual([{ status: 'cancelled', finish_reason: 'cancelled:owner_lost' }]);
  }, 30_000);

  it('two runs replicas: concurrent chats complete; answers and steering reach the owning replica', async () => {
    const [{ now: since }] = await query<{ now: Date }>(platform, 'SELECT now()');
    await platform.startReplica('runs');
    const interns = await Promise.all([0, 1, 2].map(() => createRunningIntern(platform)));
    // Two sessions per intern: never over MAX_RUNS_PER_INTERN=2.
    const sessions = Array.from({ length: 6 }, () => randomUUID());
    const internOf = (index: number) => interns[index % interns.length];

    const done = await Promise.all(
      sessions.map(async (sessionId, index) =>
        readStream(await prompt(platform, internOf(index), `/sleep 300\n/say done-${index}`, { sessionId }), 10_000),
      ),
    );
    done.forEach((summary, index) => {
      expect(summary).toMatchObject({ finishReason: 'stop', content: `done-${index}`, sessionId: sessions[index] });
    });

    await Promise.all(
      sessions.map(async (sessionId, index) => {
        const asked = await readStream(await prompt(platform, internOf(index), `/ask q-${index}?\n/say after-${index}`, { sessionId }));
        expect(asked).toMatchObject({ finishReason: 'tool_calls', sessionId });
        const reply = elicitationReply.accept({ answer: `v-${index}` });
        const continued = await readStream(asStream(await answer(platform, internOf(index), sessionId, toolCallIdOf(asked), reply)));
        expect(continued).toMatchObject({
          finishReason: 'stop',
          sessionId,
          content: `{"action":"accept","content":{"answer":"v-${index}"}}\nafter-${index}`,
        });
      }),
    );

    await Promise.all(
      sessions.map(async (sessionId, index) => {
        const stream = await prompt(platform, internOf(index), `/sleep 1500\n/say first-${index}`, { sessionId });
        await untilRole(stream);
        const steered = asJson(await chat(platform, internOf(index), promptBody(`/say steered-${index}`, { sessionId })));
        expect({ status: steered.status, body: steered.body }).toEqual({ status: 202, body: { session_id: sessionId, status: 'steered' } });
        expect(await readStream(stream, 10_000)).toMatchObject({ finishReason: 'stop', content: `first-${index}steered-${index}` });
      }),
    );

    const owners = await query<{ owner_id: string }>(platform, 'SELECT DISTINCT owner_id FROM runs.runs WHERE started_at >= $1', [since]);
    expect(owners).toHaveLength(2);
  }, 40_000);
});

describe('a platform with CHAT_TURNS_PER_MINUTE=3 and a model provider without a key', () => {
  let platform: Platform;

  beforeAll(async () => {
    // MODEL_API_KEY is set empty so a key in the test runner's own environment cannot leak in.
    platform = await startPlatform({ CHAT_TURNS_PER_MINUTE: '3', MODEL_API_BASE_URL: 'http://127.0.0.1:9', MODEL_API_KEY: '' });
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
  });

  it('counts chat prompts and invokes per caller per intern, not answers: the 4th turn is 429 rate_limited', async () => {
    const internId = await createRunningIntern(platform);
    const first = await readStream(await prompt(platform, internId, '/ask one?'));
    const second = await readStream(await prompt(platform, internId, '/ask two?'));
    const invoked = await invoke(platform, internId, { input: '/say three' });
    expect(invoked.status).toBe(202);

    const refusedChat = asJson(await chat(platform, internId, promptBody('/say four')));
    expectRateLimited(refusedChat, refusedChat.headers['retry-after'] as string | undefined);
    const refusedInvoke = await invoke(platform, internId, { input: '/say four' });
    expectRateLimited(refusedInvoke, refusedInvoke.headers.get('retry-after'));

    // Answers are not turns: with the budget spent, both questions are still answered.
    for (const asked of [first, second]) {
      const reply = asStream(await answer(platform, internId, asked.sessionId, toolCallIdOf(asked), elicitationReply.decline()));
      expect(await readStream(reply)).toMatchObject({ finishReason: 'stop', content: '{"action":"decline"}' });
    }
    // Another member has a budget of his own on the same intern.
    expect(await readStream(await prompt(platform, internId, '/say bob here', { token: KEYS.bob }))).toMatchObject({
      finishReason: 'stop',
      content: 'bob here',
    });
    const stillRefused = asJson(await chat(platform, internId, promptBody('/say five')));
    expectRateLimited(stillRefused, stillRefused.headers['retry-after'] as string | undefined);
  });

  it('answers 500 configuration_error as JSON before any stream when no provider key serves the model', async () => {
    const internId = await createRunningModelIntern(platform, PROVIDER_MODEL);
    const refused = asJson(await chat(platform, internId, promptBody('/say hi')));
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 500, body: refusal(500, 'configuration_error') });
    expect(refused.headers['content-type']).toMatch(/^application\/json/);
    const refusedInvoke = await invoke(platform, internId, { input: 'hi' });
    expect({ status: refusedInvoke.status, body: refusedInvoke.body }).toEqual({ status: 500, body: refusal(500, 'configuration_error') });
  });
});

/** What the fake provider was sent. */
interface ProviderRequest {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingHttpHeaders;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the request body as the runs service sent it
  body: any;
}

const PROVIDER_USAGE = { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 };

/** An OpenAI-compatible provider: every chat completion streams "Hello", ", world", then usage and `[DONE]`. */
async function startFakeProvider(): Promise<{ server: Server; url: string; seen: ProviderRequest[] }> {
  const seen: ProviderRequest[] = [];
  const server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on('data', (part: Buffer) => parts.push(part));
    request.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      seen.push({ method: request.method, url: request.url, headers: request.headers, body: text === '' ? null : JSON.parse(text) });
      if (request.method !== 'POST' || request.url !== '/chat/completions') {
        response.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
        return;
      }
      const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
        `data: ${JSON.stringify({ id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1, model: PROVIDER_MODEL, choices, ...extra })}\n\n`;
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      response.write(chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]));
      response.write(chunk([{ index: 0, delta: { content: 'Hello' }, finish_reason: null }]));
      response.write(chunk([{ index: 0, delta: { content: ', world' }, finish_reason: null }]));
      response.write(chunk([{ index: 0, delta: {}, finish_reason: 'stop' }]));
      response.write(chunk([], { usage: PROVIDER_USAGE }));
      response.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}`, seen };
}

describe('a platform with EXECUTION_DEADLINE_MS=1500 and an OpenAI-compatible provider', () => {
  let platform: Platform;
  let provider: Awaited<ReturnType<typeof startFakeProvider>>;

  beforeAll(async () => {
    provider = await startFakeProvider();
    platform = await startPlatform({ EXECUTION_DEADLINE_MS: '1500', MODEL_API_BASE_URL: provider.url, MODEL_API_KEY: 'test-key' });
  }, 60_000);

  afterAll(async () => {
    await platform?.stop();
    await new Promise((resolve) => provider?.server.close(resolve));
  });

  it('ends a chat run at the execution deadline: 410 run_ended', async () => {
    const internId = await createRunningIntern(platform);
    const sessionId = randomUUID();
    const before = Date.now();
    const stream = await prompt(platform, internId, '/sleep 5000\n/say too late', { sessionId });
    expectRunEnded(await readStream(stream, 8_000), sessionId);
    const elapsed = Date.now() - before;
    expect(elapsed).toBeGreaterThanOrEqual(1_400);
    expect(elapsed).toBeLessThan(4_500);
    expect(await sessionRuns(platform, sessionId)).toEqual([{ status: 'cancelled', finish_reason: 'cancelled:execution_deadline' }]);
  });

  it('ends an invoke run at the execution deadline: cancelled:execution_deadline', async () => {
    const internId = await createRunningIntern(platform);
    const started = await invoke(platform, internId, { input: '/sleep 5000\n/say too late' });
    expect(started.body).toEqual({ session_id: expect.any(String), status: 'started', run_id: expect.any(String) });
    expect(await settledRuns(platform, started.body.session_id, 1, 4_500)).toEqual([
      { status: 'cancelled', finish_reason: 'cancelled:execution_deadline' },
    ]);
  });

  it("streams the provider's content and usage, sending it the configured key and the intern's model", async () => {
    const internId = await createRunningModelIntern(platform, PROVIDER_MODEL);
    const sessionId = randomUUID();
    const stream = await prompt(platform, internId, 'Say hello', { sessionId });
    await stream.all(10_000);

    expect(stream.status).toBe(200);
    expect(stream.events.indexOf('[DONE]')).toBe(stream.events.length - 1);
    const chunks = stream.chunks;
    const id = chunks[0]?.id;
    expect(id).toMatch(CHUNK_ID);
    const head = { id, object: 'chat.completion.chunk', created: chunks[0].created, model: PROVIDER_MODEL };
    const choice = (delta: unknown, finishReason: string | null = null) => [{ index: 0, delta, finish_reason: finishReason }];
    expect(chunks).toEqual([
      { ...head, choices: choice({ role: 'assistant' }) },
      { ...head, choices: choice({ content: 'Hello' }) },
      { ...head, choices: choice({ content: ', world' }) },
      { ...head, choices: choice({}, 'stop') },
      { ...head, choices: [], session_id: sessionId, usage: PROVIDER_USAGE },
    ]);

    const completions = provider.seen.filter((request) => request.url === '/chat/completions');
    expect(completions).toHaveLength(1);
    const [sent] = completions;
    expect(sent.method).toBe('POST');
    expect(sent.headers.authorization).toBe('Bearer test-key');
    expect(sent.body).toMatchObject({ model: PROVIDER_MODEL, stream: true });
    expect(sent.body.messages[sent.body.messages.length - 1]).toEqual({ role: 'user', content: 'Say hello' });
  });
});
