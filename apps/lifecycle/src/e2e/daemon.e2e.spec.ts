/**
 * End to end: daemon access and request signing (CONTRACT section 8) through the real gateway and lifecycle:
 * every refusal with its exact body, signatures checked with node:crypto against the served JWKS, the daemon
 * verifier refusing a replayed nonce, the deprecated aliases, the turn limiter, token validity across a
 * suspend, and the operator's audit listing.
 */
import { createHash, createPublicKey, randomUUID, verify } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { DaemonTokenCheckReply, subjectsFor } from '@interns/contracts';
import { InMemoryNonceStore, jwkThumbprint, verifyInvokeRequest } from '@interns/daemon-signing';
import { connectNats, RpcClient } from '@interns/messaging';
import { Platform } from '@interns/testing';
import { API, createIntern, createRunningIntern, IDENTITIES, KEYS, refusal, WS_MAIN } from '@interns/testing/e2e';

const TURNS_PER_MINUTE = 4;
const BODY = Buffer.from('{"input":"deploy the thing"}');
const BODY_SHA256 = createHash('sha256').update(BODY).digest('hex');
const ROUTE = { method: 'POST', path: '/hooks/deploy?dry_run=1' };

let platform: Platform;
let nc: NatsConnection;
/** OAuth access tokens of the local issuer. */
const tokens = { alice: '', aliceNoVault: '', aliceNoInterns: '', bob: '' };
/** One intern per concern, so no test's turns count against another's. */
const interns = { access: '', refusals: '', signing: '', aliases: '', limited: '', suspended: '', audited: '', stopped: '', elsewhere: '' };

const accessPath = (id: string, alias = false) => `${API}/interns/${id}/${alias ? 'daemon-access' : 'daemon'}`;
const signPath = (id: string, alias = false) => `${accessPath(id, alias)}/sign`;
const reveal = (id: string, token: string, alias = false) => platform.api(accessPath(id, alias), { token });
const sign = (id: string, token: string, json: unknown = { bodySha256: BODY_SHA256 }, alias = false) =>
  platform.api(signPath(id, alias), { token, json });

/** The error envelope with its exact message. */
const exactly = (status: number, reason: string, message: string) => ({
  error: { code: status, message, metadata: { reason, retryable: false } },
});
const NOT_FOUND = exactly(404, 'not_found', 'intern not found');
const PERSONAL = exactly(403, 'personal_identity_required', 'daemon access needs a personal OAuth access token, not an API key');
const NO_VAULT = exactly(403, 'insufficient_scope', 'the access token lacks the "vault:read" scope');
const NOT_RUNNING = exactly(409, 'intern_not_running', 'the intern is not running');

async function oauthToken(member: string, scope: string): Promise<string> {
  const { access_token } = await platform.admin<{ access_token: string }>(
    'oauth-token', '--member', member, '--workspace', WS_MAIN, '--scope', scope,
  );
  return access_token;
}

function checkToken(token: string): Promise<DaemonTokenCheckReply> {
  return new RpcClient(nc).request(subjectsFor(platform.env.NATS_PREFIX as string).lifecycle.daemonTokenCheck, { token }, {
    timeoutMs: 10_000,
  });
}

async function served(): Promise<{ keys: { kty: string; crv: string; x: string; kid: string; alg: string; use: string }[] }> {
  return (await platform.api(`${API}/daemon/signing-keys`)).body;
}

function verifiesWith(jwk: { x: string }, message: string, signature: string): boolean {
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
  return verify(null, Buffer.from(message, 'utf8'), key, Buffer.from(signature, 'base64'));
}

beforeAll(async () => {
  platform = await Platform.start({ env: { CHAT_TURNS_PER_MINUTE: String(TURNS_PER_MINUTE) } });
  await platform.applyIdentities(IDENTITIES);
  nc = await connectNats({ url: platform.env.NATS_URL as string, name: 'daemon-e2e' });
  const running = ['access', 'refusals', 'signing', 'aliases', 'limited', 'suspended', 'audited'] as const;
  await Promise.all([
    ...running.map(async (name) => (interns[name] = await createRunningIntern(platform))),
    createIntern(platform).then((id) => (interns.stopped = id)),
    createRunningIntern(platform, KEYS.aliceOther).then((id) => (interns.elsewhere = id)),
    oauthToken('alice', 'interns vault:read').then((t) => (tokens.alice = t)),
    oauthToken('alice', 'interns').then((t) => (tokens.aliceNoVault = t)),
    oauthToken('alice', 'vault:read').then((t) => (tokens.aliceNoInterns = t)),
    oauthToken('bob', 'interns vault:read').then((t) => (tokens.bob = t)),
  ]);
}, 150_000);

afterAll(async () => {
  await nc?.close();
  await platform?.stop();
});

describe('GET /api/v1/daemon/signing-keys', () => {
  it('serves the public Ed25519 key as a JWKS to anyone, cacheable for five minutes', async () => {
    const response = await platform.api(`${API}/daemon/signing-keys`);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(response.body).toEqual({
      keys: [{ kty: 'OKP', crv: 'Ed25519', x: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), kid: expect.any(String), alg: 'EdDSA', use: 'sig' }],
    });
    const [jwk] = response.body.keys;
    expect(jwk.kid).toBe(jwkThumbprint(jwk));
    expect(JSON.stringify(response.body)).not.toContain('"d"');
    // A credential, even a bad one, changes nothing.
    expect((await platform.api(`${API}/daemon/signing-keys`, { token: 'nonsense' })).body).toEqual(response.body);
  });
});

describe('GET /interns/{id}/daemon', () => {
  it('reveals the origin and a fresh token, not cacheable', async () => {
    const intern = (await platform.api(`${API}/interns/${interns.access}`, { token: KEYS.alice })).body;
    const first = await reveal(interns.access, tokens.alice);
    expect(first.status).toBe(200);
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(first.body).toEqual({ origin: `https://${intern.hostname}`, token: expect.stringMatching(/^[A-Za-z0-9_-]+$/) });
    expect(Buffer.from(first.body.token, 'base64url')).toHaveLength(32);
    expect(first.headers.get('deprecation')).toBeNull();
    const second = await reveal(interns.access, tokens.alice);
    expect(second.body.token).not.toBe(first.body.token);
    expect(await checkToken(first.body.token)).toEqual({
      valid: true,
      internId: interns.access,
      memberId: 'alice',
      expiresAt: expect.any(String),
    });
  });

  it('needs a personal identity, not a scope beyond interns', async () => {
    for (const key of [KEYS.alice, KEYS.org]) {
      const response = await reveal(interns.refusals, key);
      expect({ status: response.status, body: response.body }).toEqual({ status: 403, body: PERSONAL });
    }
    expect((await reveal(interns.refusals, tokens.aliceNoVault)).status).toBe(200);
    const noInterns = await reveal(interns.refusals, tokens.aliceNoInterns);
    expect({ status: noInterns.status, body: noInterns.body }).toEqual({ status: 403, body: refusal(403, 'insufficient_scope') });
    expect((await reveal(interns.refusals, 'bogus')).status).toBe(401);
  });

  it('answers 404 for what the caller cannot see, before anything else; 409 for an intern that is not running', async () => {
    for (const id of [interns.elsewhere, randomUUID(), 'not-a-uuid']) {
      for (const credential of [tokens.alice, KEYS.alice]) {
        const response = await reveal(id, credential);
        expect({ status: response.status, body: response.body }).toEqual({ status: 404, body: NOT_FOUND });
      }
    }
    const stopped = await reveal(interns.stopped, tokens.alice);
    expect({ status: stopped.status, body: stopped.body }).toEqual({ status: 409, body: NOT_RUNNING });
    expect((await reveal(interns.stopped, KEYS.alice)).body).toEqual(PERSONAL);
  });

  it('revokes the tokens of a suspended intern', async () => {
    const { token } = (await reveal(interns.suspended, tokens.alice)).body;
    expect(await checkToken(token)).toMatchObject({ valid: true });
    expect((await platform.api(`${API}/interns/${interns.suspended}/suspend`, { method: 'POST', token: KEYS.alice })).status).toBe(200);
    expect(await checkToken(token)).toEqual({ valid: false, internId: null, memberId: null, expiresAt: null });
    expect((await reveal(interns.suspended, tokens.alice)).body).toEqual(NOT_RUNNING);
  });
});

describe('POST /interns/{id}/daemon/sign', () => {
  it('signs v1, and v2 with a single-use nonce when a route is named; both verify against the JWKS', async () => {
    const [jwk] = (await served()).keys;
    const id = interns.signing;

    const v1 = await sign(id, tokens.alice);
    expect(v1.status).toBe(200);
    expect(v1.headers.get('cache-control')).toBe('no-store');
    expect(v1.body).toEqual({
      'x-intern-invoke-signature': expect.stringMatching(/^[A-Za-z0-9+/]{86}==$/),
      'x-intern-invoke-timestamp': expect.stringMatching(/^\d+$/),
      'x-intern-invoke-user': 'alice',
    });
    const at = v1.body['x-intern-invoke-timestamp'];
    expect(Math.abs(Number(at) - Date.now() / 1000)).toBeLessThan(10);
    expect(verifiesWith(jwk, `v1\n${id}\n${at}\nalice\n${BODY_SHA256}`, v1.body['x-intern-invoke-signature'])).toBe(true);
    expect(verifiesWith(jwk, `v1\n${id}\n${at}\nbob\n${BODY_SHA256}`, v1.body['x-intern-invoke-signature'])).toBe(false);

    const v2 = await sign(id, tokens.alice, { bodySha256: BODY_SHA256, route: ROUTE });
    expect(v2.status).toBe(200);
    expect(Object.keys(v2.body).sort()).toEqual([
      'x-intern-invoke-nonce',
      'x-intern-invoke-signature',
      'x-intern-invoke-signature-v2',
      'x-intern-invoke-timestamp',
      'x-intern-invoke-user',
    ]);
    const { 'x-intern-invoke-timestamp': ts, 'x-intern-invoke-nonce': nonce } = v2.body;
    expect(nonce).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(verifiesWith(jwk, `v1\n${id}\n${ts}\nalice\n${BODY_SHA256}`, v2.body['x-intern-invoke-signature'])).toBe(true);
    const v2String = `v2\n${id}\n${ts}\n${nonce}\nalice\n${ROUTE.method}\n${ROUTE.path}\n${BODY_SHA256}`;
    expect(verifiesWith(jwk, v2String, v2.body['x-intern-invoke-signature-v2'])).toBe(true);

    // A daemon with the verifier: accepts once, refuses the replay, and refuses a tampered body.
    const nonces = new InMemoryNonceStore();
    const daemon = (bodySha256: string) =>
      verifyInvokeRequest({ headers: v2.body, internId: id, bodySha256, ...ROUTE, jwks: { keys: [jwk] }, nonces });
    expect(await daemon(createHash('sha256').update('{"input":"something else"}').digest('hex'))).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
    expect(await daemon(BODY_SHA256)).toEqual({ ok: true, version: 'v2', user: 'alice', timestamp: Number(ts), nonce });
    expect(await daemon(BODY_SHA256)).toMatchObject({ ok: false, reason: 'nonce_reused' });
    const again = await sign(id, tokens.alice, { bodySha256: BODY_SHA256, route: ROUTE });
    expect(again.body['x-intern-invoke-nonce']).not.toBe(nonce);
  });

  it('refuses API keys, tokens without vault:read, invisible and stopped interns with the exact bodies', async () => {
    const id = interns.refusals;
    for (const [credential, expected] of [
      [KEYS.alice, { status: 403, body: PERSONAL }],
      [KEYS.org, { status: 403, body: PERSONAL }],
      [tokens.aliceNoVault, { status: 403, body: NO_VAULT }],
      [tokens.aliceNoInterns, { status: 403, body: refusal(403, 'insufficient_scope') }],
      ['bogus', { status: 401, body: { error: { code: 401, message: 'invalid or missing API key' } } }],
    ] as const) {
      const response = await sign(id, credential);
      expect({ status: response.status, body: response.body }).toEqual(expected);
    }
    for (const invisible of [interns.elsewhere, randomUUID(), 'not-a-uuid']) {
      const response = await sign(invisible, KEYS.alice);
      expect({ status: response.status, body: response.body }).toEqual({ status: 404, body: NOT_FOUND });
    }
    const stopped = await sign(interns.stopped, tokens.alice);
    expect({ status: stopped.status, body: stopped.body }).toEqual({ status: 409, body: NOT_RUNNING });
    expect((await sign(interns.stopped, tokens.aliceNoVault)).body).toEqual(NO_VAULT);
  });

  it('applies the body rules first (400 invalid_body, even on an invisible intern or for an API key)', async () => {
    const bad: [unknown, string][] = [
      [{}, 'bodySha256: Invalid input: expected string, received undefined'],
      [{ bodySha256: BODY_SHA256.toUpperCase() }, 'bodySha256: must be 64 lowercase hex characters'],
      [{ bodySha256: BODY_SHA256.slice(1) }, 'bodySha256: must be 64 lowercase hex characters'],
      [{ bodySha256: BODY_SHA256, extra: 1 }, 'unknown field: extra'],
      [{ bodySha256: BODY_SHA256, route: { method: 'post', path: '/x' } }, 'route.method: must be "POST"'],
      [{ bodySha256: BODY_SHA256, route: { method: 'GET', path: '/x' } }, 'route.method: must be "POST"'],
      [{ bodySha256: BODY_SHA256, route: { method: 'POST', path: 'x' } }, "route.path: must start with '/' and hold printable ASCII without spaces"],
      [{ bodySha256: BODY_SHA256, route: { method: 'POST', path: '/a\nb' } }, "route.path: must start with '/' and hold printable ASCII without spaces"],
      [{ bodySha256: BODY_SHA256, route: { method: 'POST' } }, 'route.path: Invalid input: expected string, received undefined'],
      [{ bodySha256: BODY_SHA256, route: { method: 'POST', path: '/x', query: 'a' } }, 'route: unknown field: query'],
      [{ bodySha256: BODY_SHA256, route: null }, 'route: Invalid input: expected object, received null'],
      [[BODY_SHA256], 'body must be a JSON object'],
    ];
    for (const [json, message] of bad) {
      for (const [id, credential] of [
        [interns.refusals, tokens.alice],
        [randomUUID(), tokens.alice],
        [interns.refusals, KEYS.alice],
      ] as const) {
        const response = await sign(id, credential, json);
        expect({ status: response.status, body: response.body }).toEqual({ status: 400, body: exactly(400, 'invalid_body', message) });
      }
    }
    const notJson = await platform.api(signPath(interns.refusals), { token: tokens.alice, raw: '{nope', headers: { 'content-type': 'application/json' } });
    expect(notJson.body).toEqual(exactly(400, 'invalid_body', 'body is not valid JSON'));
    const empty = await platform.api(signPath(interns.refusals), { token: tokens.alice, method: 'POST' });
    expect(empty.body).toEqual(exactly(400, 'invalid_body', 'body must be a JSON object'));
  });

  it('counts against the chat turn limiter: 429 rate_limited with Retry-After beyond CHAT_TURNS_PER_MINUTE', async () => {
    for (let turn = 1; turn <= TURNS_PER_MINUTE; turn += 1) {
      expect((await sign(interns.limited, tokens.bob)).status).toBe(200);
    }
    const refused = await sign(interns.limited, tokens.bob);
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 429,
      body: {
        error: {
          code: 429,
          message: `at most ${TURNS_PER_MINUTE} turns per minute on this intern`,
          metadata: { reason: 'rate_limited', retryable: true },
        },
      },
    });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    // The budget is per caller per intern: alice still signs there, and bob elsewhere.
    expect((await sign(interns.limited, tokens.alice)).status).toBe(200);
    expect((await sign(interns.aliases, tokens.bob)).status).toBe(200);
  });
});

describe('the deprecated aliases', () => {
  it('answer like their routes, with Deprecation and a Link to the successor, refusals included', async () => {
    const id = interns.aliases;
    const successor = (path: string) => `<${API}/interns/${id}/${path}>; rel="successor-version"`;

    const revealed = await reveal(id, tokens.alice, true);
    expect(revealed.status).toBe(200);
    expect(revealed.body).toEqual({ origin: expect.stringMatching(/^https:\/\//), token: expect.stringMatching(/^[A-Za-z0-9_-]+$/) });
    expect(revealed.headers.get('cache-control')).toBe('no-store');
    expect(revealed.headers.get('deprecation')).toBe('true');
    expect(revealed.headers.get('link')).toBe(successor('daemon'));

    const signed = await sign(id, tokens.alice, { bodySha256: BODY_SHA256, route: ROUTE }, true);
    expect(signed.status).toBe(200);
    expect(Object.keys(signed.body)).toHaveLength(5);
    expect(signed.headers.get('cache-control')).toBe('no-store');
    expect(signed.headers.get('deprecation')).toBe('true');
    expect(signed.headers.get('link')).toBe(successor('daemon/sign'));

    const cases = [
      [await reveal(id, KEYS.alice, true), 403, PERSONAL, 'daemon'],
      [await reveal(id, 'bogus', true), 401, { error: { code: 401, message: 'invalid or missing API key' } }, 'daemon'],
      [await sign(id, tokens.aliceNoVault, undefined, true), 403, NO_VAULT, 'daemon/sign'],
      [await sign(id, tokens.alice, { bodySha256: 'x' }, true), 400, exactly(400, 'invalid_body', 'bodySha256: must be 64 lowercase hex characters'), 'daemon/sign'],
    ] as const;
    for (const [response, status, body, path] of cases) {
      expect({ status: response.status, body: response.body }).toEqual({ status, body });
      expect(response.headers.get('deprecation')).toBe('true');
      expect(response.headers.get('link')).toBe(successor(path));
    }
    const primary = await reveal(id, KEYS.alice);
    expect(primary.headers.get('deprecation')).toBeNull();
    expect(primary.headers.get('link')).toBeNull();
  });
});

describe('admin audit', () => {
  it('lists every reveal and signing of the intern, oldest first, with who and when', async () => {
    const id = interns.audited;
    const started = Date.now();
    expect(await platform.admin('audit', '--intern', id)).toEqual({ data: [] });
    expect((await reveal(id, tokens.alice)).status).toBe(200);
    expect((await sign(id, tokens.bob)).status).toBe(200);
    expect((await reveal(id, tokens.bob, true)).status).toBe(200);
    expect((await sign(id, tokens.alice, { bodySha256: BODY_SHA256, route: ROUTE }, true)).status).toBe(200);
    // Refusals are not recorded.
    expect((await sign(id, tokens.aliceNoVault)).status).toBe(403);
    expect((await reveal(id, KEYS.alice)).status).toBe(403);

    const { data } = await platform.admin<{ data: { kind: string; member_id: string; at: string }[] }>('audit', '--intern', id);
    expect(data.map(({ kind, member_id }) => [kind, member_id])).toEqual([
      ['daemon_access', 'alice'],
      ['signing', 'bob'],
      ['daemon_access', 'bob'],
      ['signing', 'alice'],
    ]);
    const times = data.map((entry) => Date.parse(entry.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(times[0]).toBeGreaterThanOrEqual(started - 1000);
    for (const entry of data) expect(entry.at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  it('fails with a message on stderr for an intern it knows nothing of', async () => {
    const unknown = randomUUID();
    await expect(platform.admin('audit', '--intern', unknown)).rejects.toMatchObject({
      code: 1,
      stderr: `error: intern ${unknown} not found\n`,
    });
  });
});
