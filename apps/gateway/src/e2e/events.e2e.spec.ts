/**
 * End to end: the workspace event stream, `GET /api/v1/events` (interface section 23), against the real platform.
 * An intern's status changes arrive live as it is created and provisioned, with `id:`, `event:` and the payload of
 * CONTRACT section 13; a run's end reaches the member who started it and organization keys, never another member;
 * nothing crosses workspaces; an intern key sees its own intern only. `Last-Event-ID` resumes with exactly the
 * events missed; an unknown, foreign or expired id is 410 `events_expired`. Keepalives, the per-caller bound, the
 * refusals of CONTRACT section 1 in the envelope, and a revoked credential ending its open stream.
 */
import { randomUUID } from 'node:crypto';
import { getForStream, type JsonAnswer, Platform, SseResponse } from '@interns/testing';
import {
  API,
  createIntern,
  createRunningIntern,
  eventually,
  IDENTITIES,
  ISO_MS,
  KEYS,
  oauthToken,
  refusal,
  sleep,
  UUID,
  WS_MAIN,
  WS_OTHER,
} from '@interns/testing/e2e';

const EVENTS = `${API}/events`;
const RETENTION_MS = 6_000;
const STREAMS_PER_CALLER = 3;
const KEEPALIVE_MS = 300;
const TEMPORARY_KEY = `uk_temporary_${randomUUID().slice(0, 8)}`;

interface WorkspaceEvent {
  id: string;
  type: string;
  created_at: string;
  workspace_id: string;
  data: Record<string, unknown> & { intern_id?: string; run_id?: string; status?: string };
}

let platform: Platform;
const open: SseResponse[] = [];

beforeAll(async () => {
  platform = await Platform.start({
    env: {
      KEEPALIVE_INTERVAL_MS: String(KEEPALIVE_MS),
      EVENTS_REPLAY_RETENTION_MS: String(RETENTION_MS),
      EVENT_STREAMS_PER_CALLER: String(STREAMS_PER_CALLER),
      CHAT_TURNS_PER_MINUTE: '1000',
    },
  });
  await platform.applyIdentities(IDENTITIES);
}, 150_000);

afterEach(() => {
  for (const stream of open.splice(0)) stream.close();
});

afterAll(async () => {
  await platform?.stop();
});

/** Opens the event stream (no Authorization header for a null token); a refusal comes back as JSON. */
async function request(token: string | null, headers: Record<string, string> = {}): Promise<SseResponse | JsonAnswer> {
  const answer = await getForStream(`${platform.gatewayUrl}${EVENTS}`, { token: token ?? undefined, headers });
  if (answer instanceof SseResponse) open.push(answer);
  return answer;
}

async function follow(token: string, headers: Record<string, string> = {}): Promise<SseResponse> {
  const answer = await request(token, headers);
  if (!(answer instanceof SseResponse)) throw new Error(`expected an event stream, got ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer;
}

/** The events so far, parsed; each one's `id:` and `event:` lines must be its id and type. */
function eventsOf(stream: SseResponse): WorkspaceEvent[] {
  return stream.events.map((data, index) => {
    const event = JSON.parse(data) as WorkspaceEvent;
    expect({ id: stream.ids[index], type: stream.types[index] }).toEqual({ id: event.id, type: event.type });
    return event;
  });
}

/** Waits until the stream holds an event matching `accept` (after the event `afterId`, when given); resolves to it. */
async function waitFor(stream: SseResponse, accept: (event: WorkspaceEvent) => boolean, afterId?: string): Promise<WorkspaceEvent> {
  // Where to look from: the start, or just after `afterId` once the stream has it (-1 until then).
  const from = () => (afterId === undefined ? 0 : stream.ids.indexOf(afterId) + 1 || -1);
  await stream.until((events) => from() >= 0 && events.slice(from()).some((data) => accept(JSON.parse(data))), 30_000);
  return eventsOf(stream).slice(from()).find(accept) as WorkspaceEvent;
}

const about = (internId: string) => (event: WorkspaceEvent) => event.data.intern_id === internId;
const statusOf = (internId: string, status: string) => (event: WorkspaceEvent) =>
  event.type === 'intern.status_changed' && event.data.intern_id === internId && event.data.status === status;
const runEnd = (runId: string) => (event: WorkspaceEvent) => event.type === 'run.completed' && event.data.run_id === runId;

/** An invoke that runs to its end; answers the run id. */
async function invoke(internId: string, token: string = KEYS.alice): Promise<string> {
  const started = await platform.api(`${API}/interns/${internId}/invoke`, { token, json: { input: '/say done' } });
  if (started.status !== 202) throw new Error(`invoke answered ${started.status}: ${started.text}`);
  return started.body.run_id as string;
}

/**
 * A later event every listed stream must see: once it arrived, anything published before it that a stream could
 * see has arrived too (one order for all), so what is missing was not sent.
 */
async function marker(...streams: SseResponse[]): Promise<void> {
  const internId = await createIntern(platform, KEYS.org);
  for (const stream of streams) await waitFor(stream, about(internId));
}

describe('live events', () => {
  it("shows an intern's creation and every status change of its provisioning, with the contract's payload", async () => {
    const stream = await follow(KEYS.alice);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream');
    expect(stream.headers['cache-control']).toBe('no-cache');
    expect(stream.headers['x-correlation-id']).toEqual(expect.any(String));
    const internId = await createIntern(platform, KEYS.alice, true);
    await waitFor(stream, statusOf(internId, 'running'));

    const events = eventsOf(stream).filter(about(internId));
    expect(events[0]).toMatchObject({ type: 'intern.created', workspace_id: WS_MAIN, data: { intern_id: internId, created_by: 'alice' } });
    const changes = events.filter((event) => event.type === 'intern.status_changed');
    expect(changes.map((event) => event.data.status)).toEqual(
      expect.arrayContaining(['queued', 'provisioning', 'running']),
    );
    expect(changes.at(-1)?.data.status).toBe('running');
    for (const event of changes) {
      expect(Object.keys(event).sort()).toEqual(['created_at', 'data', 'id', 'type', 'workspace_id']);
      expect(event.id).toMatch(UUID);
      expect(event.created_at).toMatch(ISO_MS);
      expect(event.workspace_id).toBe(WS_MAIN);
      expect(Object.keys(event.data).sort()).toEqual(['intern_id', 'previous_status', 'progress', 'status']);
    }
    expect(changes.find((event) => event.data.status === 'provisioning')?.data.progress).toMatchObject({ total_steps: 4 });
    // Every event once, in one order.
    expect(new Set(stream.ids).size).toBe(stream.ids.length);
  }, 60_000);

  it("sends a run's end to the member who started it and to organization keys, never to another member", async () => {
    const internId = await createRunningIntern(platform);
    const [alice, bob, org] = [await follow(KEYS.alice), await follow(KEYS.bob), await follow(KEYS.org)];
    const runId = await invoke(internId);

    const completed = await waitFor(alice, runEnd(runId));
    expect(completed).toEqual({
      id: expect.stringMatching(UUID),
      type: 'run.completed',
      created_at: expect.stringMatching(ISO_MS),
      workspace_id: WS_MAIN,
      data: { intern_id: internId, run_id: runId, session_id: expect.any(String), origin: 'invoke', finish_reason: 'stop', usage: expect.anything() },
    });
    expect(eventsOf(alice).find((event) => event.type === 'run.started' && event.data.run_id === runId)?.data).toMatchObject({ user_id: 'alice' });
    expect((await waitFor(org, runEnd(runId))).id).toBe(completed.id);

    await marker(bob);
    expect(eventsOf(bob).filter((event) => event.data.run_id === runId)).toEqual([]);
  }, 60_000);
});

describe('visibility', () => {
  it("never shows one workspace's events in another", async () => {
    const main = await follow(KEYS.alice);
    const other = await follow(KEYS.aliceOther);
    const mainIntern = await createIntern(platform, KEYS.alice);
    const otherIntern = await createIntern(platform, KEYS.aliceOther);
    await waitFor(other, about(otherIntern));
    await waitFor(main, about(mainIntern));
    await marker(main);

    expect(eventsOf(other).every((event) => event.workspace_id === WS_OTHER)).toBe(true);
    expect(eventsOf(other).filter(about(mainIntern))).toEqual([]);
    expect(eventsOf(main).every((event) => event.workspace_id === WS_MAIN)).toBe(true);
    expect(eventsOf(main).filter(about(otherIntern))).toEqual([]);
  }, 30_000);

  it("shows an intern key its own intern only, every run of it included", async () => {
    const [own, neighbour] = await Promise.all([createRunningIntern(platform), createRunningIntern(platform)]);
    const { key } = await platform.admin<{ key: string }>('intern-key', '--intern', own);
    const scoped = await follow(key);
    const neighbourRun = await invoke(neighbour);
    const ownRun = await invoke(own);
    expect((await waitFor(scoped, runEnd(ownRun))).data.intern_id).toBe(own);
    expect((await platform.api(`${API}/interns/${own}/suspend`, { method: 'POST', token: KEYS.alice })).status).toBe(200);
    await waitFor(scoped, statusOf(own, 'stopped'));

    const seen = eventsOf(scoped);
    expect(seen.filter(about(neighbour))).toEqual([]);
    expect(seen.filter((event) => event.data.run_id === neighbourRun)).toEqual([]);
    expect(seen.every((event) => event.data.intern_id === own)).toBe(true);
  }, 60_000);
});

describe('resuming with Last-Event-ID', () => {
  it('sends exactly the events missed, in order, then goes on live', async () => {
    const witness = await follow(KEYS.alice);
    const internId = await createRunningIntern(platform);
    const seen = await follow(KEYS.alice);
    const runId = await invoke(internId);
    const last = await waitFor(seen, runEnd(runId));
    seen.close();

    // Missed while away: a suspend and a provision of the intern, each with its status changes.
    expect((await platform.api(`${API}/interns/${internId}/suspend`, { method: 'POST', token: KEYS.alice })).status).toBe(200);
    const stopped = await waitFor(witness, statusOf(internId, 'stopped'), last.id);
    expect((await platform.api(`${API}/interns/${internId}/provision`, { method: 'POST', token: KEYS.alice })).status).toBe(202);
    await waitFor(witness, statusOf(internId, 'running'), stopped.id);
    const witnessed = witness.ids.slice(witness.ids.indexOf(last.id) + 1);
    expect(witnessed.length).toBeGreaterThanOrEqual(3);

    const resumed = await follow(KEYS.alice, { 'last-event-id': last.id.toUpperCase() });
    await resumed.until((events) => events.length >= witnessed.length);
    expect(resumed.ids.slice(0, witnessed.length)).toEqual(witnessed);
    const live = await createIntern(platform, KEYS.alice);
    await waitFor(resumed, about(live));
    await waitFor(witness, about(live));
    expect(resumed.ids).toEqual(witness.ids.slice(witness.ids.indexOf(last.id) + 1));
  }, 60_000);

  it('answers 410 events_expired for an unknown id, another workspace\'s, or one older than EVENTS_REPLAY_RETENTION_MS; 400 for a non-uuid', async () => {
    const expired = refusal(410, 'events_expired');
    const unknown = await request(KEYS.alice, { 'last-event-id': randomUUID() });
    expect(unknown).toMatchObject({ status: 410, body: expired });
    expect((unknown as JsonAnswer).body.error.message).toContain('EVENTS_REPLAY_RETENTION_MS');
    expect(await request(KEYS.alice, { 'last-event-id': '42' })).toMatchObject({ status: 400, body: refusal(400, 'invalid_body') });

    const other = await follow(KEYS.aliceOther);
    const foreign = await waitFor(other, about(await createIntern(platform, KEYS.aliceOther)));
    expect(await request(KEYS.alice, { 'last-event-id': foreign.id })).toMatchObject({ status: 410, body: expired });
    // The same id resumes for a credential of its workspace, while it is kept.
    expect((await follow(KEYS.aliceOther, { 'last-event-id': foreign.id })).status).toBe(200);

    await sleep(RETENTION_MS + 1_500);
    expect(await request(KEYS.aliceOther, { 'last-event-id': foreign.id })).toMatchObject({ status: 410, body: expired });
  }, 30_000);
});

describe('the connection', () => {
  it('writes a keepalive comment after KEEPALIVE_INTERVAL_MS of silence', async () => {
    // A workspace where nothing happens.
    const quiet = await follow(KEYS.readonly);
    await eventually(async () => quiet.comments, (comments) => comments.filter((comment) => comment === 'keepalive').length >= 2, 5_000);
    expect(quiet.events).toEqual([]);
    expect(quiet.isEnded).toBe(false);
  });

  it('holds at most EVENT_STREAMS_PER_CALLER streams of one caller open, then 429 rate_limited', async () => {
    // (A stream of bob's an earlier test closed counts until the gateway has seen it close.)
    const held: SseResponse[] = [];
    for (let i = 0; i < STREAMS_PER_CALLER; i += 1) {
      held.push((await eventually(() => request(KEYS.bob), (answer) => answer.status === 200)) as SseResponse);
    }
    const refused = await request(KEYS.bob);
    expect(refused).toMatchObject({ status: 429, body: refusal(429, 'rate_limited', true) });
    expect((refused as JsonAnswer).headers['retry-after']).toMatch(/^\d+$/);
    // Another caller is not counted against bob.
    expect((await follow(KEYS.org)).status).toBe(200);
    held[0].close();
    await eventually(() => request(KEYS.bob), (answer) => answer.status === 200);
  }, 30_000);

  it('refuses as every intern route does, in the envelope', async () => {
    const unauthenticated = { error: { code: 401, message: 'invalid or missing API key' } };
    expect(await request(null)).toMatchObject({ status: 401, body: unauthenticated });
    expect(await request('uk_nobody')).toMatchObject({ status: 401, body: unauthenticated });
    expect(await request(KEYS.management)).toMatchObject({ status: 401, body: unauthenticated });
    expect(await request(KEYS.disabled)).toMatchObject({ status: 401, body: unauthenticated });
    expect(await request(KEYS.carolInactive)).toMatchObject({ status: 403, body: refusal(403, 'forbidden') });
    expect(await request(await oauthToken(platform, 'vault:read'))).toMatchObject({ status: 403, body: refusal(403, 'insufficient_scope') });
    expect(await request(KEYS.outside)).toMatchObject({ status: 404, body: refusal(404, 'not_found') });
    expect(await request(KEYS.alice, { host: 'eu.localhost' })).toMatchObject({ status: 403, body: refusal(403, 'forbidden') });
    // An OAuth token with the scope is an intern route credential.
    expect((await follow(await oauthToken(platform, 'interns'))).status).toBe(200);
  }, 60_000);

  it('ends an open stream once its credential is revoked', async () => {
    const temporary = { key: TEMPORARY_KEY, kind: 'user', organization_id: 'acme', workspace_id: WS_MAIN, member_id: 'bob' };
    await platform.applyIdentities({ ...IDENTITIES, api_keys: [...IDENTITIES.api_keys, temporary] });
    const stream = await follow(TEMPORARY_KEY);
    await sleep(KEEPALIVE_MS * 2);
    expect(stream.isEnded).toBe(false);
    await platform.applyIdentities({ ...IDENTITIES, api_keys: [...IDENTITIES.api_keys, { ...temporary, disabled: true }] });
    await eventually(async () => stream.isEnded, (ended) => ended, 10_000);
    expect(await request(TEMPORARY_KEY)).toMatchObject({ status: 401 });
  }, 60_000);
});
