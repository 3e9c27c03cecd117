/**
 * End to end: the door (interface section 20) through the real gateway, lifecycle and runs. Requests go to the
 * gateway's port with the intern's hostname as `Host`, as a client resolving `*.interns.localhost` to loopback would
 * send them: the origin daemon access answers (INTERN_ORIGIN), `GET /`, every refusal in the contract's order, a
 * signed `POST /api/invoke` whose run then exists, each signature fault (a nonce replayed on another gateway replica
 * included), suspend and revocation. The stale timestamp is checked where the clock can be set (door.unit.spec.ts).
 */
import { createHash } from 'node:crypto';
import { Platform } from '@interns/testing';
import type { ApiResponse } from '@interns/testing';
import {
  API,
  createIntern,
  createRunningIntern,
  eventually,
  IDENTITIES,
  ISO_MS,
  KEYS,
  oauthToken,
  WS_MAIN,
} from '@interns/testing/e2e';

/** Low enough to reach with a few signings: sign and invoke share the chat turn limiter. */
const TURNS_PER_MINUTE = 12;
/** Not the gateway's port: the door ignores the port of `Host`, and the origin is what clients are told. */
const INTERN_ORIGIN = 'http://{hostname}:18080';
const INVOKE = '/api/invoke';
const UNAUTHENTICATED = { error: { code: 401, message: 'invalid or missing API key' } };
const envelope = (status: number, reason: string, message: string | RegExp = /.+/) => ({
  error: { code: status, message: typeof message === 'string' ? message : expect.stringMatching(message), metadata: { reason, retryable: false } },
});
const invalidSignature = (message: RegExp) => envelope(401, 'invalid_signature', message);

/** Rita: a member of the main workspace whose deactivation revokes her daemon tokens. */
const WITH_RITA = { ...IDENTITIES, members: [...IDENTITIES.members, { id: 'rita', organization_id: 'acme', active: true }] };

let platform: Platform;
const oauth = { alice: '', bob: '', rita: '' };
/** Interns by concern; `hostname` of each from the API. */
const interns = { main: '', other: '', suspended: '', revoked: '', limited: '', stopped: '' };
const hostnames: Record<string, string> = {};

interface Door {
  origin: string;
  token: string;
}

async function daemonAccess(internId: string, token = oauth.alice): Promise<Door> {
  const revealed = await platform.api(`${API}/interns/${internId}/daemon`, { token });
  if (revealed.status !== 200) throw new Error(`daemon access answered ${revealed.status}: ${revealed.text}`);
  return revealed.body as Door;
}

/** A request to the door at `host` (what `Host` says), sent to the gateway `baseUrl` (default the first). */
function knock(
  host: string,
  path: string,
  options: { token?: string; method?: string; raw?: Buffer | string; headers?: Record<string, string>; baseUrl?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { host, ...options.headers };
  if (options.raw !== undefined) headers['content-type'] ??= 'application/json';
  return platform.api(path, { method: options.method, token: options.token, raw: options.raw, headers, baseUrl: options.baseUrl });
}

/** `/daemon/sign` for the door's invoke route (or `route`), over exactly these bytes; null route: v1 only. */
async function sign(
  internId: string,
  body: Buffer,
  options: { token?: string; route?: { method: string; path: string } | null } = {},
): Promise<Record<string, string>> {
  const route = options.route === undefined ? { method: 'POST', path: INVOKE } : options.route;
  const json = { bodySha256: createHash('sha256').update(body).digest('hex'), ...(route === null ? {} : { route }) };
  const signed = await platform.api(`${API}/interns/${internId}/daemon/sign`, { token: options.token ?? oauth.alice, json });
  if (signed.status !== 200) throw new Error(`sign answered ${signed.status}: ${signed.text}`);
  return signed.body as Record<string, string>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read arbitrary JSON bodies
type Answer = ApiResponse<any>;

const invokeBody = (input: string) => Buffer.from(JSON.stringify({ input }));

beforeAll(async () => {
  platform = await Platform.start({ env: { INTERN_ORIGIN, CHAT_TURNS_PER_MINUTE: String(TURNS_PER_MINUTE) } });
  await platform.applyIdentities(WITH_RITA);
  await Promise.all([
    ...(['main', 'other', 'suspended', 'revoked', 'limited'] as const).map(async (name) => (interns[name] = await createRunningIntern(platform))),
    createIntern(platform).then((id) => (interns.stopped = id)),
    oauthToken(platform, 'interns vault:read').then((token) => (oauth.alice = token)),
    oauthToken(platform, 'interns vault:read', 'bob').then((token) => (oauth.bob = token)),
    oauthToken(platform, 'interns vault:read', 'rita', WS_MAIN).then((token) => (oauth.rita = token)),
  ]);
  for (const [name, id] of Object.entries(interns)) {
    hostnames[name] = (await platform.api(`${API}/interns/${id}`, { token: KEYS.alice })).body.hostname;
  }
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

describe('host routing and GET /', () => {
  it('answers the origin of INTERN_ORIGIN, and at it tells who the token is', async () => {
    const { origin, token } = await daemonAccess(interns.main);
    expect(origin).toBe(`http://${hostnames.main}:18080`);
    const answer = await knock(new URL(origin).host, '/', { token });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.body).toEqual({
      intern_id: interns.main,
      name: expect.any(String),
      status: 'running',
      member_id: 'alice',
      expires_at: expect.stringMatching(ISO_MS),
    });
    expect(hostnames.main.startsWith(`${answer.body.name}-`)).toBe(true);
    // The host as DNS compares it: another port, other case, the root dot.
    for (const host of [hostnames.main, `${hostnames.main.toUpperCase()}:1`, `${hostnames.main}.`]) {
      expect({ host, status: (await knock(host, '/', { token })).status }).toEqual({ host, status: 200 });
    }
  });

  it('never serves /api/v1 at an intern hostname, and leaves other hosts to the API', async () => {
    const { token } = await daemonAccess(interns.main);
    expect((await knock(hostnames.main, `${API}/interns`, { token })).body).toEqual(envelope(404, 'not_found'));
    expect((await knock(hostnames.main, '/no/such/route', { token })).body).toEqual(envelope(404, 'not_found'));
    // A WebSocket upgrade anywhere but the terminal's path is answered like any path the door does not serve.
    const upgrade = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' };
    expect((await knock(hostnames.main, '/api/terminals', { token, headers: upgrade })).body).toEqual(envelope(404, 'not_found'));
    // An API key is no daemon token.
    const withKey = await knock(hostnames.main, `${API}/interns`, { token: KEYS.alice });
    expect({ status: withKey.status, body: withKey.body }).toEqual({ status: 401, body: UNAUTHENTICATED });
    expect((await knock('localhost:8080', `${API}/interns`, { token: KEYS.alice })).status).toBe(200);
    expect((await knock('eu.localhost', `${API}/interns`, { token: KEYS.alice })).body).toEqual(envelope(403, 'forbidden'));
    // The door's routes do not exist for other hosts.
    expect((await knock('localhost', '/', { token })).status).toBe(404);
    expect((await knock('localhost', INVOKE, { token, raw: invokeBody('x') })).status).toBe(404);
  });
});

describe('door checks, in order', () => {
  it('answers 404 for a name under INTERN_DOMAIN that no intern has, whatever the token', async () => {
    const { token } = await daemonAccess(interns.main);
    for (const host of ['nobody-00000000.interns.localhost', 'x.y.interns.localhost', hostnames.stopped ?? 'unset.interns.localhost']) {
      const answer = await knock(host, '/', { token });
      expect({ host, status: answer.status, body: answer.body }).toEqual({
        host,
        status: 404,
        body: envelope(404, 'not_found', 'no intern answers at this hostname'),
      });
    }
  });

  it("refuses a missing, unknown or another intern's token with 401 and no metadata", async () => {
    const other = await daemonAccess(interns.other);
    for (const token of [undefined, 'not-a-daemon-token-at-all-0000', other.token]) {
      const answer = await knock(hostnames.main, '/', { token });
      expect({ status: answer.status, body: answer.body }).toEqual({ status: 401, body: UNAUTHENTICATED });
    }
    expect((await knock(hostnames.other, '/', { token: other.token })).status).toBe(200);
  });

  it('answers 409 intern_not_running once the intern is suspended, to a client holding its old token', async () => {
    const { token } = await daemonAccess(interns.suspended);
    expect((await knock(hostnames.suspended, '/', { token })).status).toBe(200);
    expect((await platform.api(`${API}/interns/${interns.suspended}/suspend`, { method: 'POST', token: KEYS.alice })).status).toBe(200);
    const refused = await eventually(
      () => knock(hostnames.suspended, '/', { token }),
      (answer) => answer.status !== 200,
      5_000,
    );
    expect(refused.body).toEqual(envelope(409, 'intern_not_running'));
    // Without a token too: the intern's state comes before the credential.
    expect((await knock(hostnames.suspended, '/')).body).toEqual(envelope(409, 'intern_not_running'));
  });

  it('stops taking a revoked token (its member deactivated) within AUTH_CACHE_TTL_MS', async () => {
    const { token } = await daemonAccess(interns.revoked, oauth.rita);
    expect((await knock(hostnames.revoked, '/', { token })).body.member_id).toBe('rita');
    await platform.applyIdentities({
      ...WITH_RITA,
      members: WITH_RITA.members.map((member) => (member.id === 'rita' ? { ...member, active: false } : member)),
    });
    const refused = await eventually(
      () => knock(hostnames.revoked, '/', { token }),
      (answer) => answer.status !== 200,
      2_000 + 3_000,
    );
    expect({ status: refused.status, body: refused.body }).toEqual({ status: 401, body: UNAUTHENTICATED });
    // The intern still answers its other members.
    expect((await knock(hostnames.revoked, '/', { token: (await daemonAccess(interns.revoked)).token })).status).toBe(200);
  });
});

describe('POST /api/invoke', () => {
  it('starts the run as the token\'s member for a good signature: section 7\'s 202, and the run exists', async () => {
    const { token } = await daemonAccess(interns.main);
    const body = invokeBody('hello through the door');
    const answer = await knock(hostnames.main, INVOKE, { token, raw: body, headers: await sign(interns.main, body) });
    expect({ status: answer.status, body: answer.body }).toEqual({
      status: 202,
      body: { session_id: expect.any(String), status: 'started', run_id: expect.any(String) },
    });
    const run = await platform.api(`${API}/interns/${interns.main}/runs/${answer.body.run_id}`, { token: KEYS.alice });
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({ id: answer.body.run_id, intern_id: interns.main, session_id: answer.body.session_id, origin: 'invoke' });
    // Alice's run: another member does not see it.
    expect((await platform.api(`${API}/interns/${interns.main}/runs/${answer.body.run_id}`, { token: KEYS.bob })).status).toBe(404);
  });

  it('refuses a changed byte, another path, v1 headers only and a signature for another member: 401 invalid_signature', async () => {
    const { token } = await daemonAccess(interns.main);
    const body = invokeBody('sign me');
    const changed = Buffer.from(body);
    changed[changed.length - 3] ^= 0x01;
    const faults: [string, Promise<Answer>, RegExp][] = [
      ['changed byte', knock(hostnames.main, INVOKE, { token, raw: changed, headers: await sign(interns.main, body) }), /does not match/],
      [
        'other path',
        knock(hostnames.main, INVOKE, { token, raw: body, headers: await sign(interns.main, body, { route: { method: 'POST', path: '/api/other' } }) }),
        /does not match/,
      ],
      ['v1 only', knock(hostnames.main, INVOKE, { token, raw: body, headers: await sign(interns.main, body, { route: null }) }), /v2 signature/],
      ['other member', knock(hostnames.main, INVOKE, { token, raw: body, headers: await sign(interns.main, body, { token: oauth.bob }) }), /token's member/],
      ['no signature', knock(hostnames.main, INVOKE, { token, raw: body }), /./],
    ];
    for (const [fault, pending, message] of faults) {
      const answer = await pending;
      expect({ fault, status: answer.status, body: answer.body }).toEqual({ fault, status: 401, body: invalidSignature(message) });
    }
  });

  it('takes a nonce once across gateway replicas: the replay is refused on another gateway too', async () => {
    const { token } = await daemonAccess(interns.main);
    const body = invokeBody('once only');
    const headers = await sign(interns.main, body);
    const replica = await platform.startReplica('gateway');
    expect((await knock(hostnames.main, INVOKE, { token, raw: body, headers })).status).toBe(202);
    for (const baseUrl of [platform.gatewayUrl, replica.url]) {
      const replay = await knock(hostnames.main, INVOKE, { token, raw: body, headers, baseUrl });
      expect({ baseUrl, status: replay.status, body: replay.body }).toEqual({ baseUrl, status: 401, body: invalidSignature(/used before/) });
    }
  });

  it("counts against the member's chat turn limiter, shared with signing: 429 rate_limited with Retry-After", async () => {
    const { token } = await daemonAccess(interns.limited);
    const body = invokeBody('one turn too many');
    const signatures: Record<string, string>[] = [];
    for (let turn = 0; turn < TURNS_PER_MINUTE; turn += 1) signatures.push(await sign(interns.limited, body));
    const answer = await knock(hostnames.limited, INVOKE, { token, raw: body, headers: signatures[0] });
    expect({ status: answer.status, body: answer.body }).toEqual({
      status: 429,
      body: { error: { code: 429, message: expect.any(String), metadata: { reason: 'rate_limited', retryable: true } } },
    });
    expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('applies the body rules of the API before the signature: 400, 415, 413', async () => {
    const { token } = await daemonAccess(interns.main);
    const badJson = await knock(hostnames.main, INVOKE, { token, raw: '{"input":' });
    expect({ status: badJson.status, reason: badJson.body.error?.metadata?.reason }).toEqual({ status: 400, reason: 'invalid_body' });
    const unknownField = await knock(hostnames.main, INVOKE, { token, raw: '{"input":"x","extra":1}' });
    expect({ status: unknownField.status, reason: unknownField.body.error?.metadata?.reason }).toEqual({ status: 400, reason: 'invalid_body' });
    const notJson = await knock(hostnames.main, INVOKE, { token, raw: '{"input":"x"}', headers: { 'content-type': 'text/plain' } });
    expect(notJson.body).toEqual(envelope(415, 'unsupported_media_type'));
    const huge = await knock(hostnames.main, INVOKE, { token, raw: Buffer.alloc(1048577, 0x20) });
    expect(huge.body).toEqual(envelope(413, 'payload_too_large'));
    // The token is checked before any of them.
    expect((await knock(hostnames.main, INVOKE, { raw: '{"input":' })).status).toBe(401);
  });
});
