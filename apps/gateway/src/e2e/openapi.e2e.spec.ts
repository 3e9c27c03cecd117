// Longer than 300 lines on purpose: one platform checks every documented operation against the served document, and the coverage test at the end needs them all in one file.
/**
 * End to end: the OpenAPI document the gateway serves at /api/v1/openapi.json, checked against real answers of
 * the running system. Every route of the contract is driven (success answers, a representative of every error
 * status, the chat and run event streams chunk by chunk with their ids, the deprecated aliases), and each answer
 * must be documented for its method and path: status, content type, body schema and required headers. The last
 * test checks that every documented operation was exercised.
 */
import { createHash, randomUUID } from 'node:crypto';
import { OPENAPI_DOCUMENT } from '@interns/contracts/openapi';
import type { OpenApiDocument } from '@interns/contracts/openapi';
import { OpenApiResponseValidator, Platform, SseResponse } from '@interns/testing';
import type { ApiRequest, ApiResponse, JsonAnswer, ObservedResponse } from '@interns/testing';
import {
  answerBody,
  API,
  asStream,
  chatPath,
  createIntern,
  createRunningIntern,
  elicitationReply,
  eventually,
  IDENTITIES,
  ISO_MS,
  KEYS,
  permissionArguments,
  promptBody,
  query,
  untilRole,
  UUID,
  WS_MAIN,
  WS_OTHER,
} from '@interns/testing/e2e';

const TURNS_PER_MINUTE = 4;
const BODY_SHA256 = createHash('sha256').update('{"input":"deploy"}').digest('hex');

let platform: Platform;
let validator: OpenApiResponseValidator;
const tokens = { full: '', noVault: '', noInterns: '' };
/** One intern per concern, so turn limits and run limits never cross tests. */
const interns = { talk: '', steer: '', busy: '', ended: '', daemon: '', limited: '', runs: '', inbox: '', files: '', stopped: '' };

// ---- requests whose answers are checked against the served document ----

function methodOf(request: ApiRequest): string {
  return request.method ?? (request.json === undefined && request.raw === undefined ? 'GET' : 'POST');
}

function expectDocumented(observed: ObservedResponse, text: string): void {
  const answer = `${observed.method} ${observed.url} -> ${observed.status}`;
  const body = text.slice(0, 400);
  expect({ answer, body, problems: validator.problems(observed) }).toEqual({ answer, body, problems: [] });
}

/** One request; its answer must match the document. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
async function call(path: string, request: ApiRequest = {}): Promise<ApiResponse<any>> {
  const response = await platform.api(path, request);
  expectDocumented({ method: methodOf(request), url: path, status: response.status, headers: response.headers, body: response.body }, response.text);
  return response;
}

/** Expects `status` with `reason` (when given), after checking the answer against the document. */
async function refusedWith(status: number, reason: string | null, path: string, request: ApiRequest = {}): Promise<ApiResponse> {
  const response = await call(path, request);
  expect({ status: response.status, reason: response.body?.error?.metadata?.reason ?? null }).toEqual({ status, reason });
  return response;
}

/** Posts to chat; a JSON answer is checked at once, a stream once it ended (see `ended`). */
async function chat(internId: string, body: unknown, token: string = KEYS.alice): Promise<SseResponse | JsonAnswer> {
  const response = await platform.post(chatPath(internId), token, body);
  if (!(response instanceof SseResponse)) {
    const observed = { method: 'POST', url: chatPath(internId), status: response.status, headers: response.headers, body: response.body };
    expectDocumented(observed, JSON.stringify(response.body));
  }
  return response;
}

async function stream(internId: string, body: unknown): Promise<SseResponse> {
  const response = await chat(internId, body);
  if (response instanceof SseResponse) return response;
  throw new Error(`expected an event stream, got ${response.status} ${JSON.stringify(response.body)}`);
}

/** Waits for the end of a chat stream and checks it (headers, every chunk and its id, `[DONE]`); resolves to its chunks. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- chunks were validated against the schema
async function ended(internId: string, response: SseResponse): Promise<any[]> {
  await streamEnded('POST', chatPath(internId), response);
  return response.chunks;
}

/** Waits for the end of the stream `method url` answered, checks it as `ended` does; resolves to its events with their ids. */
async function streamEnded(method: string, url: string, response: SseResponse): Promise<{ id: string | undefined; data: string }[]> {
  await response.all(30_000);
  const observed = { method, url, status: response.status, headers: response.headers, events: response.events, ids: response.ids };
  const answer = `${method} ${url} -> ${response.status}`;
  expect({ answer, problems: validator.streamProblems(observed) }).toEqual({ answer, problems: [] });
  return response.events.map((data, index) => ({ id: response.ids[index], data }));
}

/** GETs a run's stream; a JSON answer (a refusal) is checked at once, a stream once it ended (see `streamEnded`). */
async function follow(path: string, headers?: Record<string, string>): Promise<SseResponse | JsonAnswer> {
  const response = await platform.getStream(path, KEYS.alice, headers);
  if (!(response instanceof SseResponse)) {
    expectDocumented({ method: 'GET', url: path, status: response.status, headers: response.headers, body: response.body }, JSON.stringify(response.body));
  }
  return response;
}

function finishOf(chunks: { choices: { finish_reason: string | null }[] }[]): string | null {
  return chunks.at(-2)?.choices[0]?.finish_reason ?? null;
}

async function oauthToken(scope: string): Promise<string> {
  const { access_token } = await platform.admin<{ access_token: string }>('oauth-token', '--member', 'alice', '--workspace', WS_MAIN, '--scope', scope);
  return access_token;
}

const internPath = (id: string, rest = '') => `${API}/interns/${id}${rest}`;
const runPath = (internId: string, runId: string, rest = '') => internPath(internId, `/runs/${runId}${rest}`);
const uniqueName = (stem: string) => `${stem}-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  platform = await Platform.start({
    // Webhooks: an endpoint on a local port nothing listens on, so its deliveries log shows failed attempts.
    env: { CHAT_TURNS_PER_MINUTE: String(TURNS_PER_MINUTE), MAX_RUNS_PER_INTERN: '1', WEBHOOK_ALLOW_INSECURE: 'true' },
  });
  await platform.applyIdentities(IDENTITIES);
  // The document the answers are checked against is the one the gateway serves.
  const served = await platform.api<OpenApiDocument>(`${API}/openapi.json`);
  validator = new OpenApiResponseValidator(served.body);
  const running = ['talk', 'steer', 'busy', 'ended', 'daemon', 'limited', 'runs', 'inbox', 'files'] as const;
  await Promise.all([
    ...running.map(async (name) => (interns[name] = await createRunningIntern(platform, KEYS.alice, 60_000))),
    createIntern(platform).then((id) => (interns.stopped = id)),
    oauthToken('interns vault:read').then((token) => (tokens.full = token)),
    oauthToken('interns').then((token) => (tokens.noVault = token)),
    oauthToken('vault:read').then((token) => (tokens.noInterns = token)),
  ]);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

describe('GET /openapi.json', () => {
  it('serves the OpenAPI 3.1 document publicly as cacheable JSON, the same as the contracts define', async () => {
    const response = await call(`${API}/openapi.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(response.body).toEqual(JSON.parse(JSON.stringify(OPENAPI_DOCUMENT)));
    expect(response.body.info.version).toBe('1.0.0');
  });

  it('answers 304 to If-None-Match with its ETag, and ignores credentials and regional hosts', async () => {
    const first = await call(`${API}/openapi.json`, { token: 'nonsense', headers: { host: 'eu.localhost' } });
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag') as string;
    const again = await call(`${API}/openapi.json`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.raw).toHaveLength(0);
  });
});

describe('lifecycle routes', () => {
  it('create: 201, an idempotent replay 200, and its refusals', async () => {
    const name = uniqueName('doc');
    const key = randomUUID();
    const created = await call(`${API}/interns`, { token: KEYS.alice, json: { name, description: 'd' }, headers: { 'idempotency-key': key } });
    expect(created.status).toBe(201);
    const replayed = await call(`${API}/interns`, { token: KEYS.alice, json: { name, description: 'd' }, headers: { 'idempotency-key': key } });
    expect({ status: replayed.status, id: replayed.body.id }).toEqual({ status: 200, id: created.body.id });

    await refusedWith(409, 'idempotency_key_reused', `${API}/interns`, { token: KEYS.alice, json: { name }, headers: { 'idempotency-key': key } });
    await refusedWith(409, 'name_taken', `${API}/interns`, { token: KEYS.alice, json: { name } });
    await refusedWith(409, 'vault_not_attachable', `${API}/interns`, { token: KEYS.alice, json: { name: uniqueName('v'), vault_id: randomUUID() } });
    await refusedWith(400, 'invalid_body', `${API}/interns`, { token: KEYS.alice, json: { name: 'Not A Name' } });
    await refusedWith(400, 'invalid_body', `${API}/interns`, { token: KEYS.alice, json: { name: uniqueName('k') }, headers: { 'idempotency-key': 'k'.repeat(256) } });
    await refusedWith(413, 'payload_too_large', `${API}/interns`, { token: KEYS.alice, json: { name: 'x', description: 'a'.repeat(1_048_600) } });
    await refusedWith(415, 'unsupported_media_type', `${API}/interns`, { token: KEYS.alice, raw: '{"name":"plain"}', headers: { 'content-type': 'text/plain' } });
    await refusedWith(404, 'not_found', `${API}/interns`, { token: KEYS.readonly, json: { name: uniqueName('ro') } });
  });

  it('the access checks: 401 without metadata, 403 forbidden and insufficient_scope, 404 outside the programme', async () => {
    const unauthenticated = await refusedWith(401, null, `${API}/interns`);
    expect(unauthenticated.body).toEqual({ error: { code: 401, message: 'invalid or missing API key' } });
    await refusedWith(401, null, `${API}/interns`, { token: KEYS.management });
    await refusedWith(403, 'forbidden', `${API}/interns`, { token: KEYS.carolInactive });
    await refusedWith(403, 'forbidden', `${API}/interns`, { token: KEYS.alice, headers: { host: 'eu.localhost' } });
    await refusedWith(403, 'insufficient_scope', `${API}/interns`, { token: tokens.noInterns });
    await refusedWith(404, 'not_found', `${API}/interns`, { token: KEYS.outside });
  });

  it('list: pages with next_cursor only while has_more, filters, and its refusals', async () => {
    await Promise.all([createIntern(platform), createIntern(platform)]);
    const first = await call(`${API}/interns?limit=1`, { token: KEYS.alice });
    expect({ status: first.status, has_more: first.body.has_more }).toEqual({ status: 200, has_more: true });
    const next = await call(`${API}/interns?limit=1&starting_after=${encodeURIComponent(first.body.next_cursor)}`, { token: KEYS.alice });
    expect(next.status).toBe(200);
    const last = await call(`${API}/interns?limit=500&status=running%2Cstopped`, { token: KEYS.alice });
    expect({ status: last.status, has_more: last.body.has_more, cursor: 'next_cursor' in last.body }).toEqual({ status: 200, has_more: false, cursor: false });
    const byOrganizationKey = await call(`${API}/interns?workspace_id=${WS_MAIN}`, { token: KEYS.org });
    expect(byOrganizationKey.body.data.some((intern: object) => 'created_by_you' in intern)).toBe(false);

    await refusedWith(400, 'invalid_body', `${API}/interns?limit=0`, { token: KEYS.alice });
    await refusedWith(400, 'invalid_body', `${API}/interns?starting_after=forged`, { token: KEYS.alice });
    await refusedWith(404, 'not_found', `${API}/interns?workspace_id=${WS_OTHER}`, { token: KEYS.alice });
  });

  it('get, as a member, an organization key and an intern key; 404 for a non-uuid and the intern key on the collection', async () => {
    const id = await createIntern(platform);
    expect((await call(internPath(id), { token: KEYS.alice })).body.created_by_you).toBe(true);
    expect('created_by_you' in (await call(internPath(id), { token: KEYS.org })).body).toBe(false);
    const { key } = await platform.admin<{ key: string }>('intern-key', '--intern', id);
    expect((await call(internPath(id), { token: key })).status).toBe(200);
    await refusedWith(404, 'not_found', `${API}/interns`, { token: key });
    await refusedWith(404, 'not_found', internPath('not-a-uuid'), { token: KEYS.alice });
  });

  it('update: 200 with the Intern, 400 and 409 name_taken', async () => {
    const [id, other] = await Promise.all([createIntern(platform), createIntern(platform)]);
    const otherName = (await call(internPath(other), { token: KEYS.alice })).body.name;
    const updated = await call(internPath(id), { method: 'PATCH', token: KEYS.alice, json: { description: 'new', model: null } });
    expect({ status: updated.status, description: updated.body.description }).toEqual({ status: 200, description: 'new' });
    await refusedWith(400, 'invalid_body', internPath(id), { method: 'PATCH', token: KEYS.alice, json: { colour: 'blue' } });
    await refusedWith(409, 'name_taken', internPath(id), { method: 'PATCH', token: KEYS.alice, json: { name: otherName } });
  });

  it('icon: the PNG with ETag and cache policy, immutable with ?v, 304 on If-None-Match', async () => {
    const id = await createIntern(platform);
    const sha256 = (await call(internPath(id), { token: KEYS.alice })).body.icon_sha256 as string;
    const icon = await call(internPath(id, '/icon'), { token: KEYS.alice });
    expect(icon.status).toBe(200);
    expect(createHash('sha256').update(icon.raw).digest('hex')).toBe(sha256);
    const versioned = await call(internPath(id, `/icon?v=${sha256}`), { token: KEYS.alice });
    expect(versioned.headers.get('cache-control')).toBe('private, max-age=31536000, immutable');
    const unchanged = await call(internPath(id, '/icon'), { token: KEYS.alice, headers: { 'if-none-match': `"${sha256}"` } });
    expect(unchanged.status).toBe(304);
  });

  it('provision 202, suspend 200, delete 202; 409 intern_busy, 400 for a body on a command, 415 on delete', async () => {
    const [fresh, doomed, acknowledged] = await Promise.all([createIntern(platform), createIntern(platform), createIntern(platform)]);
    expect((await call(internPath(fresh, '/provision'), { token: KEYS.alice, raw: '' })).status).toBe(202);
    await refusedWith(409, 'intern_busy', internPath(interns.daemon, '/provision'), { token: KEYS.alice, raw: '' });
    await refusedWith(400, 'invalid_body', internPath(fresh, '/suspend'), { token: KEYS.alice, json: { now: true } });
    expect((await call(internPath(interns.stopped, '/suspend'), { token: KEYS.alice, raw: '' })).status).toBe(200);
    await refusedWith(415, 'unsupported_media_type', internPath(doomed), { method: 'DELETE', token: KEYS.alice, raw: 'yes', headers: { 'content-type': 'text/plain' } });
    expect((await call(internPath(doomed), { method: 'DELETE', token: KEYS.alice })).body).toEqual({ deleting: true });
    const withBody = await call(internPath(acknowledged), { method: 'DELETE', token: KEYS.alice, json: { acknowledge_workspace_loss: true } });
    expect(withBody.status).toBe(202);
  });
});

describe('chat and invoke', () => {
  it('streams a response whose every chunk is documented, ending with stop', async () => {
    const chunks = await ended(interns.talk, await stream(interns.talk, promptBody('/say hello from the document')));
    expect(finishOf(chunks)).toBe('stop');
  });

  it('pauses on a question (tool_calls), resumes on the answer; 409 and 404 for answers that fit no open question', async () => {
    const paused = await ended(interns.talk, await stream(interns.talk, promptBody('/ask your name?\n/say thanks')));
    expect(finishOf(paused)).toBe('tool_calls');
    const sessionId = paused.at(-1).session_id as string;
    const toolCallId = paused.at(-3).choices[0].delta.tool_calls[0].id as string;
    expect(validator.componentProblems('ProvideInputArguments', JSON.parse(paused.at(-3).choices[0].delta.tool_calls[0].function.arguments))).toEqual([]);

    const reply = elicitationReply.accept({ answer: 'Ada' });
    const resumed = await ended(interns.talk, await stream(interns.talk, answerBody(sessionId, toolCallId, reply)));
    expect(finishOf(resumed)).toBe('stop');
    const again = (await chat(interns.talk, answerBody(sessionId, toolCallId, reply))) as JsonAnswer;
    expect({ status: again.status, reason: again.body.error.metadata.reason }).toEqual({ status: 409, reason: 'interaction_not_pending' });
    const unknown = (await chat(interns.talk, answerBody(sessionId, 'call_unknown', reply))) as JsonAnswer;
    expect({ status: unknown.status, reason: unknown.body.error.metadata.reason }).toEqual({ status: 404, reason: 'interaction_unknown' });
  });

  it('refuses before any stream: 400, 413, 415, 409 intern_not_running', async () => {
    expect(((await chat(interns.talk, { stream: false, messages: [{ role: 'user', content: 'x' }] })) as JsonAnswer).status).toBe(400);
    expect(((await chat(interns.talk, promptBody('a'.repeat(1_048_600)))) as JsonAnswer).status).toBe(413);
    await refusedWith(415, 'unsupported_media_type', chatPath(interns.talk), { token: KEYS.alice, raw: '{}', headers: { 'content-type': 'text/plain' } });
    const notRunning = (await chat(interns.stopped, promptBody('/say hi'))) as JsonAnswer;
    expect({ status: notRunning.status, reason: notRunning.body.error.metadata.reason }).toEqual({ status: 409, reason: 'intern_not_running' });
  });

  it('steers a prompt into the going run of its session: 202', async () => {
    const sessionId = randomUUID();
    const first = await stream(interns.steer, promptBody('/sleep 5000\n/say first', { sessionId }));
    await untilRole(first, 20_000);
    const steered = (await chat(interns.steer, promptBody('/say second', { sessionId }))) as JsonAnswer;
    expect(steered.body).toEqual({ session_id: sessionId, status: 'steered' });
    expect(finishOf(await ended(interns.steer, first))).toBe('stop');
  });

  it('ends a stream with a documented error chunk (410 run_ended) when the intern is suspended', async () => {
    const going = await stream(interns.ended, promptBody('/sleep 5000\n/say too late'));
    await untilRole(going, 20_000);
    expect((await call(internPath(interns.ended, '/suspend'), { token: KEYS.alice, raw: '' })).body).toEqual({ suspended: true });
    const chunks = await ended(interns.ended, going);
    expect(finishOf(chunks)).toBe('error');
    expect(chunks.at(-2).error.metadata.reason).toBe('run_ended');
  });

  it('invoke: 202 started, 409 busy beyond the run limit, 202 steered, 404 for a foreign session, 400', async () => {
    const path = internPath(interns.busy, '/invoke');
    const started = await call(path, { token: KEYS.alice, json: { input: '/sleep 4000\n/say slept' } });
    expect(started.body.status).toBe('started');
    const busy = await refusedWith(409, 'busy', path, { token: KEYS.alice, json: { input: '/say another run' } });
    expect(busy.headers.get('retry-after')).toMatch(/^\d+$/);
    const steered = await call(path, { token: KEYS.alice, json: { input: '/say steered', session_id: started.body.session_id } });
    expect(steered.body).toEqual({ session_id: started.body.session_id, status: 'steered', run_id: started.body.run_id });
    await refusedWith(404, 'not_found', internPath(interns.talk, '/invoke'), { token: KEYS.alice, json: { input: 'x', session_id: 'not-mine' } });
    await refusedWith(400, 'invalid_body', path, { token: KEYS.alice, json: { input: 'x', extra: 1 } });
  });
});

describe('runs, their streams and the question inbox', () => {
  /** The run as GET answers it (checked against the document), once `accept` holds. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- runs were validated against the schema
  const runWhen = (internId: string, runId: string, accept: (run: any) => boolean) =>
    eventually(async () => (await call(runPath(internId, runId), { token: KEYS.alice })).body, accept, 20_000);
  const untilRunStatus = (internId: string, runId: string, status: string) => runWhen(internId, runId, (run) => run.status === status);
  const contentOf = (events: { data: string }[]) =>
    events
      .filter((event) => event.data !== '[DONE]')
      .map((event) => JSON.parse(event.data).choices[0]?.delta?.content ?? '')
      .join('');

  it('invoke names its run; the list pages with next_cursor only while has_more and filters; get; 400 and 404', async () => {
    const invokePath = internPath(interns.runs, '/invoke');
    const first = await call(invokePath, { token: KEYS.alice, json: { input: '/say one' } });
    expect(first.body).toEqual({ session_id: expect.any(String), status: 'started', run_id: expect.stringMatching(UUID) });
    await untilRunStatus(interns.runs, first.body.run_id, 'completed');
    const second = await call(invokePath, { token: KEYS.alice, json: { input: '/say two', session_id: first.body.session_id } });
    const run = await untilRunStatus(interns.runs, second.body.run_id, 'completed');
    expect(run).toMatchObject({ id: second.body.run_id, origin: 'invoke', finish_reason: 'stop', open_question: null, ended_at: expect.stringMatching(ISO_MS) });

    const page = await call(`${internPath(interns.runs, '/runs')}?limit=1`, { token: KEYS.alice });
    expect({ status: page.status, ids: page.body.data.map((listed: { id: string }) => listed.id), has_more: page.body.has_more }).toEqual({
      status: 200,
      ids: [second.body.run_id],
      has_more: true,
    });
    const next = await call(`${internPath(interns.runs, '/runs')}?limit=1&starting_after=${encodeURIComponent(page.body.next_cursor)}`, { token: KEYS.alice });
    expect(next.body.data[0].id).toBe(first.body.run_id);
    const filtered = await call(`${internPath(interns.runs, '/runs')}?status=completed%2Ccancelled&session_id=${first.body.session_id}`, { token: KEYS.alice });
    expect({ ids: filtered.body.data.map((listed: { id: string }) => listed.id), has_more: filtered.body.has_more, cursor: 'next_cursor' in filtered.body }).toEqual({
      ids: [second.body.run_id, first.body.run_id],
      has_more: false,
      cursor: false,
    });

    for (const query of ['limit=501', 'status=done', 'starting_after=forged']) {
      await refusedWith(400, 'invalid_body', `${internPath(interns.runs, '/runs')}?${query}`, { token: KEYS.alice });
    }
    await refusedWith(404, 'not_found', runPath(interns.runs, 'not-a-uuid'), { token: KEYS.alice });
    await refusedWith(404, 'not_found', runPath(interns.talk, first.body.run_id), { token: KEYS.alice });
    await refusedWith(404, 'not_found', internPath('not-a-uuid', '/runs'), { token: KEYS.alice });
  });

  it("a run's stream replays a background chat's events with their ids, and resumes after starting_after or Last-Event-ID; 400, 404", async () => {
    const chatted = await stream(interns.runs, { ...promptBody('/say hello\n/say again'), background: true });
    const runId = chatted.headers['x-run-id'] as string;
    expect(runId).toMatch(UUID);
    const live = await streamEnded('POST', chatPath(interns.runs), chatted);
    await untilRunStatus(interns.runs, runId, 'completed');

    const streamPath = runPath(interns.runs, runId, '/stream');
    const replay = asStream(await follow(streamPath));
    expect(replay.headers['x-run-id']).toBe(runId);
    expect(await streamEnded('GET', streamPath, replay)).toEqual(live);
    expect(await streamEnded('GET', streamPath, asStream(await follow(`${streamPath}?starting_after=2`)))).toEqual(live.slice(2));
    expect(await streamEnded('GET', streamPath, asStream(await follow(streamPath, { 'last-event-id': '3' })))).toEqual(live.slice(3));

    for (const [path, headers] of [[`${streamPath}?starting_after=-1`, undefined], [streamPath, { 'last-event-id': 'x' }]] as const) {
      const refused = await follow(path, headers);
      expect({ path, status: refused.status, reason: (refused as JsonAnswer).body?.error?.metadata?.reason }).toEqual({ path, status: 400, reason: 'invalid_body' });
    }
    const unknown = await follow(runPath(interns.runs, 'not-a-uuid', '/stream'));
    expect({ status: unknown.status, reason: (unknown as JsonAnswer).body?.error?.metadata?.reason }).toEqual({ status: 404, reason: 'not_found' });
  });

  it('cancel: 202 while the run goes (its reader ends with stop), 409 run_not_active once it ended, 400 for a body, 404', async () => {
    const started = await call(internPath(interns.runs, '/invoke'), { token: KEYS.alice, json: { input: '/say start\n/sleep 10000\n/say never' } });
    const runId = started.body.run_id as string;
    const streamPath = runPath(interns.runs, runId, '/stream');
    const reader = asStream(await follow(streamPath));
    await reader.until((events) => events.length >= 2, 20_000);

    const cancelPath = runPath(interns.runs, runId, '/cancel');
    const cancelled = await call(cancelPath, { token: KEYS.alice, raw: '' });
    expect({ status: cancelled.status, body: cancelled.body }).toEqual({ status: 202, body: { cancelling: true } });
    const events = await streamEnded('GET', streamPath, reader);
    expect(finishOf(events.slice(0, -1).map((event) => JSON.parse(event.data)))).toBe('stop');
    expect(contentOf(events)).not.toContain('never');
    expect((await untilRunStatus(interns.runs, runId, 'cancelled')).finish_reason).toBe('stop');

    await refusedWith(409, 'run_not_active', cancelPath, { token: KEYS.alice, raw: '' });
    await refusedWith(400, 'invalid_body', cancelPath, { token: KEYS.alice, json: { now: true } });
    await refusedWith(404, 'not_found', runPath(interns.runs, 'not-a-uuid', '/cancel'), { token: KEYS.alice, raw: '' });
  });

  it('the inbox lists open questions; the answer route answers them (202), the run goes on; 400, 404 interaction_unknown, 409', async () => {
    const asked = await stream(interns.inbox, promptBody('/shell echo hi', { approvalMode: 'manual' }));
    const runId = asked.headers['x-run-id'] as string;
    const paused = await ended(interns.inbox, asked);
    expect(finishOf(paused)).toBe('tool_calls');
    const toolCallId = paused.at(-3).choices[0].delta.tool_calls[0].id as string;
    const question = {
      run_id: runId,
      session_id: paused.at(-1).session_id,
      tool_call_id: toolCallId,
      arguments: permissionArguments('echo hi'),
      expires_at: expect.stringMatching(ISO_MS),
    };
    const inbox = await eventually(
      async () => (await call(internPath(interns.inbox, '/questions'), { token: KEYS.alice })).body.data,
      (data: { run_id: string }[]) => data.some((open) => open.run_id === runId),
      20_000,
    );
    expect(inbox).toContainEqual(question);
    const { run_id: _runId, session_id: _sessionId, ...openQuestion } = question;
    expect(await runWhen(interns.inbox, runId, (run) => run.status === 'awaiting_input')).toMatchObject({ origin: 'chat', open_question: openQuestion });

    const answerPath = runPath(interns.inbox, runId, '/answer');
    await refusedWith(400, 'invalid_body', answerPath, { token: KEYS.alice, json: { tool_call_id: toolCallId, content: 'allow_once', extra: 1 } });
    await refusedWith(400, 'invalid_body', answerPath, { token: KEYS.alice, json: { tool_call_id: toolCallId, content: 'maybe' } });
    await refusedWith(404, 'interaction_unknown', answerPath, { token: KEYS.alice, json: { tool_call_id: 'call_unknown', content: 'allow_once' } });
    await refusedWith(404, 'not_found', runPath(interns.inbox, 'not-a-uuid', '/answer'), { token: KEYS.alice, json: { tool_call_id: toolCallId, content: 'allow_once' } });
    const answered = await call(answerPath, { token: KEYS.alice, json: { tool_call_id: toolCallId, content: 'allow_once' } });
    expect({ status: answered.status, body: answered.body }).toEqual({ status: 202, body: { answered: true } });
    await refusedWith(409, 'interaction_not_pending', answerPath, { token: KEYS.alice, json: { tool_call_id: toolCallId, content: 'allow_once' } });

    // The run goes on with no stream attached; its stream replays both responses, numbered on, and follows it to its end.
    const streamPath = runPath(interns.inbox, runId, '/stream');
    const events = await streamEnded('GET', streamPath, asStream(await follow(streamPath)));
    expect(contentOf(events)).toContain('hi\n');
    expect((await untilRunStatus(interns.inbox, runId, 'completed')).open_question).toBeNull();

    // An elicitation, answered through the inbox as well.
    const elicited = await stream(interns.inbox, promptBody('/ask What is your name?\n/say Thanks'));
    const elicitedRun = elicited.headers['x-run-id'] as string;
    const elicitation = await ended(interns.inbox, elicited);
    const elicitationId = elicitation.at(-3).choices[0].delta.tool_calls[0].id as string;
    await eventually(
      async () => (await call(internPath(interns.inbox, '/questions'), { token: KEYS.alice })).body.data,
      (data: { tool_call_id: string }[]) => data.some((open) => open.tool_call_id === elicitationId),
      20_000,
    );
    const reply = elicitationReply.accept({ answer: 'Ada' });
    expect((await call(runPath(interns.inbox, elicitedRun, '/answer'), { token: KEYS.alice, json: { tool_call_id: elicitationId, content: reply } })).status).toBe(202);
    expect((await untilRunStatus(interns.inbox, elicitedRun, 'completed')).finish_reason).toBe('stop');
  });
});

describe('daemon access and signing', () => {
  it('reveals with an OAuth token (route and alias); 403 for an API key, 409 for a stopped intern', async () => {
    expect((await call(internPath(interns.daemon, '/daemon'), { token: tokens.full })).status).toBe(200);
    const alias = await call(internPath(interns.daemon, '/daemon-access'), { token: tokens.full });
    expect({ status: alias.status, deprecation: alias.headers.get('deprecation') }).toEqual({ status: 200, deprecation: 'true' });
    await refusedWith(403, 'personal_identity_required', internPath(interns.daemon, '/daemon-access'), { token: KEYS.alice });
    await refusedWith(409, 'intern_not_running', internPath(interns.stopped, '/daemon'), { token: tokens.full });
  });

  it('signs v1 and v2 (route and alias); 400, 403 insufficient_scope, then 429 beyond the turn limit', async () => {
    const sign = (json: unknown, token = tokens.full, alias = false) =>
      call(internPath(interns.limited, alias ? '/daemon-access/sign' : '/daemon/sign'), { token, json });
    const v1 = await sign({ bodySha256: BODY_SHA256 });
    expect(v1.status).toBe(200);
    const v2 = await sign({ bodySha256: BODY_SHA256, route: { method: 'POST', path: '/hooks/deploy' } });
    expect(Object.keys(v2.body)).toContain('x-intern-invoke-nonce');
    expect((await sign({ bodySha256: BODY_SHA256 }, tokens.full, true)).status).toBe(200);
    await refusedWith(400, 'invalid_body', internPath(interns.limited, '/daemon/sign'), { token: tokens.full, json: { bodySha256: 'ABC' } });
    await refusedWith(403, 'insufficient_scope', internPath(interns.limited, '/daemon/sign'), { token: tokens.noVault, json: { bodySha256: BODY_SHA256 } });
    // Three signings and the refused one (counted before lifecycle judged the scope): TURNS_PER_MINUTE spent.
    const limited = await refusedWith(429, 'rate_limited', internPath(interns.limited, '/daemon/sign'), { token: tokens.full, json: { bodySha256: BODY_SHA256 } });
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
  });

  it('serves the signing keys to anyone', async () => {
    expect((await call(`${API}/daemon/signing-keys`)).status).toBe(200);
  });
});

describe('webhooks', () => {
  it('creates, lists, logs deliveries of and deletes an endpoint, and refuses as documented', async () => {
    const created = await call(`${API}/webhooks`, {
      token: KEYS.alice,
      json: { url: 'http://127.0.0.1:9/hook', events: ['intern.status_changed'], description: 'openapi' },
    });
    expect(created.status).toBe(201);
    expect((await call(`${API}/webhooks`, { token: KEYS.org })).status).toBe(200);
    await createIntern(platform);
    const log = await eventually(
      () => call(`${API}/webhooks/${created.body.id}/deliveries`, { token: KEYS.alice }),
      // Its first attempt recorded (a claim counts the attempt before its result is in).
      (answer) => typeof answer.body.data?.[0]?.last_error === 'string',
      15_000,
    );
    expect(log.body.data[0]).toMatchObject({ event_type: 'intern.status_changed', last_status_code: null, last_error: expect.any(String) });

    await refusedWith(400, 'invalid_body', `${API}/webhooks`, { token: KEYS.alice, json: { url: 'http://127.0.0.1:9/', events: [] } });
    await refusedWith(403, 'forbidden', `${API}/webhooks`, { token: KEYS.management });
    expect((await call(`${API}/webhooks`)).status).toBe(401);
    await refusedWith(404, 'not_found', `${API}/webhooks/${created.body.id}/deliveries`, { token: KEYS.aliceOther });
    expect((await call(`${API}/webhooks/${created.body.id}`, { method: 'DELETE', token: KEYS.alice })).status).toBe(202);
    await refusedWith(404, 'not_found', `${API}/webhooks/${created.body.id}`, { method: 'DELETE', token: KEYS.alice });
  });
});

describe('the vault', () => {
  it('writes, lists, copies and deletes secrets of both scopes, and refuses as documented', async () => {
    const hosts = ['api.example.com'];
    expect((await call(`${API}/vault/secrets/openapi_token`, { method: 'PUT', token: KEYS.alice, json: { value: 'v', hosts } })).status).toBe(200);
    expect((await call(`${API}/vault/secrets?limit=10`, { token: KEYS.org })).status).toBe(200);
    const intern = await createIntern(platform);
    const copied = await call(`${API}/vault/interns/${intern}/secrets/copy`, { method: 'POST', token: KEYS.alice, json: { names: ['openapi_token'] } });
    expect(copied.status).toBe(200);
    expect((await call(`${API}/vault/interns/${intern}/secrets/own_token`, { method: 'PUT', token: KEYS.alice, json: { value: 'w', hosts } })).status).toBe(200);
    expect((await call(`${API}/vault/interns/${intern}/secrets`, { token: tokens.full })).body.data).toHaveLength(2);
    expect((await call(`${API}/vault/interns/${intern}/secrets/own_token`, { method: 'DELETE', token: KEYS.alice })).status).toBe(204);
    expect((await call(`${API}/vault/secrets/openapi_token`, { method: 'DELETE', token: KEYS.alice })).status).toBe(204);

    await refusedWith(400, 'invalid_body', `${API}/vault/secrets/Bad-Name`, { method: 'PUT', token: KEYS.alice, json: { value: 'v', hosts } });
    await refusedWith(404, 'not_found', `${API}/vault/secrets/openapi_token`, { method: 'DELETE', token: KEYS.alice });
    await refusedWith(404, 'not_found', `${API}/vault/interns/${intern}/secrets`, { token: KEYS.aliceOther });
    await refusedWith(415, 'unsupported_media_type', `${API}/vault/secrets/x`, { method: 'PUT', token: KEYS.alice, raw: '{}' });
    await refusedWith(413, 'payload_too_large', `${API}/vault/secrets/x`, { method: 'PUT', token: KEYS.alice, json: { value: 'v'.repeat(430_000), hosts } });
    await refusedWith(503, 'vault_writes_disabled', `${API}/vault/secrets/x`, { method: 'PUT', token: KEYS.readonly, json: { value: 'v', hosts } });
    expect((await call(`${API}/vault/secrets`, { token: KEYS.management })).status).toBe(401);
  });
});

describe("an intern's egress policy", () => {
  it('answers the empty default, replaces it, and refuses as documented', async () => {
    const intern = await createIntern(platform);
    expect((await call(internPath(intern, '/egress'), { token: tokens.noVault })).body).toEqual({ allow: [] });
    const put = await call(internPath(intern, '/egress'), { method: 'PUT', token: KEYS.alice, json: { allow: ['API.example.com.', '*.example.org'] } });
    expect(put.body).toEqual({ allow: ['api.example.com', '*.example.org'] });
    const { key } = await platform.admin<{ key: string }>('intern-key', '--intern', intern);
    expect((await call(internPath(intern, '/egress'), { token: key })).body).toEqual(put.body);

    await refusedWith(400, 'invalid_body', internPath(intern, '/egress'), { method: 'PUT', token: KEYS.alice, json: { allow: ['*.com'] } });
    await refusedWith(403, 'forbidden', internPath(intern, '/egress'), { method: 'PUT', token: key, json: { allow: [] } });
    await refusedWith(404, 'not_found', internPath(intern, '/egress'), { token: KEYS.aliceOther });
    await refusedWith(415, 'unsupported_media_type', internPath(intern, '/egress'), { method: 'PUT', token: KEYS.alice, raw: '{}' });
    expect((await call(internPath(intern, '/egress'), { token: KEYS.management })).status).toBe(401);
  });
});

describe("an intern's egress log", () => {
  it('answers pages of entries as documented, and refuses as documented', async () => {
    const intern = await createIntern(platform);
    expect((await call(internPath(intern, '/egress/log'), { token: KEYS.alice })).body).toEqual({ data: [], has_more: false });
    // Entries come from the egress proxy's traffic: written here as its sink writes them, one of each kind.
    await query(
      platform,
      `INSERT INTO egress.log (id, intern_id, run_id, at, host, port, method, path, decision, reason, secrets, status, bytes_out, bytes_in) VALUES
         (gen_random_uuid(), $1, NULL, now(), 'pypi.org', 443, NULL, NULL, 'allowed', NULL, '{}', NULL, 517, 20480),
         (gen_random_uuid(), $1, $2, now(), 'api.github.com', 443, 'GET', '/user', 'allowed', NULL, '{github_token}', 200, 812, 4096),
         (gen_random_uuid(), $1, $2, now(), 'example.net', 80, 'POST', '/', 'denied', 'egress_denied: example.net is not in this intern''s egress policy', '{}', NULL, 0, 0)`,
      [intern, randomUUID()],
    );
    const { key } = await platform.admin<{ key: string }>('intern-key', '--intern', intern);
    const first = await call(internPath(intern, '/egress/log?limit=2'), { token: key });
    expect({ decisions: first.body.data.map((entry: { decision: string }) => entry.decision), has_more: first.body.has_more }).toEqual({
      decisions: ['denied', 'allowed'],
      has_more: true,
    });
    const rest = await call(internPath(intern, `/egress/log?starting_after=${encodeURIComponent(first.body.next_cursor)}`), { token: tokens.noVault });
    expect(rest.body).toEqual({ data: [expect.objectContaining({ host: 'pypi.org', method: null })], has_more: false });

    await refusedWith(400, 'invalid_body', internPath(intern, '/egress/log?limit=501'), { token: KEYS.alice });
    await refusedWith(400, 'invalid_body', internPath(intern, '/egress/log?starting_after=garbage'), { token: KEYS.alice });
    await refusedWith(403, 'insufficient_scope', internPath(intern, '/egress/log'), { token: tokens.noInterns });
    await refusedWith(404, 'not_found', internPath(intern, '/egress/log'), { token: KEYS.aliceOther });
    expect((await call(internPath(intern, '/egress/log'), { token: KEYS.management })).status).toBe(401);
  });
});

describe('GET /analytics/meta', () => {
  it('answers the catalogue to a management key, and errors without metadata', async () => {
    expect((await call(`${API}/analytics/meta`, { token: KEYS.management })).status).toBe(200);
    expect((await call(`${API}/analytics/meta`)).body).toEqual({ error: { code: 401, message: 'missing authentication header' } });
    expect((await call(`${API}/analytics/meta`, { token: 'unknown' })).status).toBe(401);
    expect((await call(`${API}/analytics/meta`, { token: KEYS.alice })).status).toBe(403);
  });
});

describe('POST /analytics/query', () => {
  it('answers rows to a management key, and refusals without metadata', async () => {
    const body = { metrics: ['run_count', 'avg_latency'], dimensions: ['model'], granularity: 'hour', order_by: { field: 'date', direction: 'asc' } };
    expect((await call(`${API}/analytics/query`, { method: 'POST', token: KEYS.management, json: body })).status).toBe(200);
    const refused = await call(`${API}/analytics/query`, { method: 'POST', token: KEYS.management, json: { metrics: ['cost'] } });
    expect(refused.body).toEqual({ error: { code: 400, message: 'metrics[0]: unknown metric "cost"' } });
    expect((await call(`${API}/analytics/query`, { method: 'POST', json: body })).status).toBe(401);
    expect((await call(`${API}/analytics/query`, { method: 'POST', token: KEYS.alice, json: body })).status).toBe(403);
  });
});

describe("an intern's files", () => {
  it('lists, uploads (201, 200), downloads, deletes (204), and refuses as documented', async () => {
    const id = interns.files;
    const file = (path: string) => internPath(id, `/files/${path}`);
    const upload = (path: string, raw: string | Buffer) => call(file(path), { method: 'PUT', token: KEYS.alice, raw, headers: { 'content-type': 'text/plain' } });
    expect((await upload('docs/readme.txt', 'hello')).status).toBe(201);
    expect((await upload('docs/readme.txt', 'hello again')).status).toBe(200);
    expect((await call(internPath(id, '/files'), { token: KEYS.alice })).body.data).toEqual([expect.objectContaining({ name: 'docs', type: 'directory' })]);
    expect((await call(file('docs'), { token: KEYS.alice })).body.data.map((entry: { name: string }) => entry.name)).toEqual(['readme.txt']);
    const download = await call(file('docs/readme.txt'), { token: KEYS.alice });
    expect([download.status, download.text, download.headers.get('content-type')]).toEqual([200, 'hello again', 'application/octet-stream']);
    // (The client's URL parser would resolve a `..`: files.e2e sends those raw.)
    await refusedWith(400, 'invalid_body', file('docs//readme.txt'), { token: KEYS.alice });
    await refusedWith(400, 'invalid_body', file('docs'), { method: 'DELETE', token: KEYS.alice });
    await refusedWith(404, 'not_found', file('missing.txt'), { token: KEYS.alice });
    await refusedWith(404, 'not_found', file('docs/readme.txt'), { token: KEYS.aliceOther });
    expect((await call(file('docs?recursive=true'), { method: 'DELETE', token: KEYS.alice })).status).toBe(204);
    await refusedWith(401, null, file('x'));
  });
});

describe('the workspace event stream', () => {
  it('streams documented events with their ids and types (intern and run events), and refuses as documented: 410, 400, 401', async () => {
    const path = `${API}/events`;
    const events = asStream(await follow(path));
    // An intern of its own: the run limits of the others' tests are not touched.
    const internId = await createRunningIntern(platform, KEYS.alice, 60_000);
    const invoked = await call(internPath(internId, '/invoke'), { token: KEYS.alice, json: { input: '/say events' } });
    const runId = invoked.body.run_id as string;
    await events.until((data) => data.some((text) => text.includes(internId)) && data.some((text) => text.includes(runId) && text.includes('run.completed')), 30_000);
    events.close();
    expect(events.types).toEqual(events.chunks.map((event: { type: string }) => event.type));
    const observed = { method: 'GET', url: path, status: events.status, headers: events.headers, events: events.events, ids: events.ids, types: events.types, endless: true };
    expect({ problems: validator.streamProblems(observed) }).toEqual({ problems: [] });

    await refusedWith(410, 'events_expired', path, { token: KEYS.alice, headers: { 'last-event-id': randomUUID() } });
    await refusedWith(400, 'invalid_body', path, { token: KEYS.alice, headers: { 'last-event-id': '7' } });
    await refusedWith(401, null, path);
  }, 90_000);
});

describe('coverage', () => {
  it('exercised every documented operation with a success, and every error status the contract names', () => {
    const exercised = [...validator.exercised];
    const succeeded = new Set(exercised.filter((entry) => /\s2\d\d$/.test(entry)).map((entry) => entry.replace(/\s\d+$/, '')));
    const missing = validator.operations().filter((operation) => !succeeded.has(operation));
    expect(missing).toEqual([]);
    const statuses = new Set(exercised.map((entry) => entry.split(' ').at(-1)));
    expect([...statuses].sort()).toEqual(expect.arrayContaining(['200', '201', '202', '204', '304', '400', '401', '403', '404', '409', '413', '415', '429', '503']));
  });
});
