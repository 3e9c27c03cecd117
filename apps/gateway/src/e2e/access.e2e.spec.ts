/**
 * End to end: CONTRACT section 1's checks in their order, and section 4's body rules, for every
 * credential kind, with exact bodies.
 */
import { randomUUID } from 'node:crypto';
import { Platform } from '@interns/testing';
import { IDENTITIES, KEYS, WS_MAIN, WS_OUTSIDE, WS_READONLY } from '@interns/testing/e2e';

const API = '/api/v1';
const UNAUTHENTICATED = { error: { code: 401, message: 'invalid or missing API key' } };
let platform: Platform;
let internId: string;

function refusal(status: number, reason: string, retryable = false) {
  return { error: { code: status, message: expect.any(String), metadata: { reason, retryable } } };
}

beforeAll(async () => {
  platform = await Platform.start();
  await platform.applyIdentities(IDENTITIES);
  internId = (await platform.api(`${API}/interns`, { token: KEYS.alice, json: { name: 'visible' } })).body.id;
});

afterAll(async () => {
  await platform?.stop();
});

describe('credentials (check 2): 401 without metadata', () => {
  it.each([
    ['no Authorization header', {}],
    ['an unknown key', { authorization: 'Bearer nope' }],
    ['a disabled key', { authorization: `Bearer ${KEYS.disabled}` }],
    ['a management key', { authorization: `Bearer ${KEYS.management}` }],
    ['a non-bearer scheme', { authorization: `Basic ${KEYS.alice}` }],
    ['a JWT with a bad signature', { authorization: 'Bearer eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhbGljZSJ9.c2ln' }],
  ])('%s', async (_label, headers) => {
    for (const [method, path] of [
      ['GET', '/interns'],
      ['GET', `/interns/${internId}`],
      ['POST', '/interns'],
      ['PATCH', `/interns/${internId}`],
    ]) {
      const response = await platform.api(`${API}${path}`, { method, headers, raw: method === 'GET' ? undefined : '{}' });
      expect(response.status).toBe(401);
      expect(response.body).toEqual(UNAUTHENTICATED);
    }
  });

  it('comes before body rules: an oversized body without a credential is 401', async () => {
    const response = await platform.api(`${API}/interns`, { raw: 'x'.repeat(1048577), headers: { 'content-type': 'text/plain' } });
    expect(response.status).toBe(401);
  });
});

describe('regional host (check 1)', () => {
  it('answers 403 forbidden on <region>.<PUBLIC_HOST>, whatever the port', async () => {
    for (const host of ['eu.localhost', 'us-east-1.localhost:8080']) {
      const response = await platform.api(`${API}/interns`, { token: KEYS.alice, headers: { host } });
      expect(response.status).toBe(403);
      expect(response.body).toEqual(refusal(403, 'forbidden'));
    }
    // Even before the credential check.
    expect((await platform.api(`${API}/interns`, { headers: { host: 'eu.localhost' } })).status).toBe(403);
    // The plain public host and hosts that are not regional are served.
    expect((await platform.api(`${API}/interns`, { token: KEYS.alice, headers: { host: 'localhost' } })).status).toBe(200);
  });
});

describe('owner lost access and scopes (check 3)', () => {
  it('answers 403 forbidden for an inactive member', async () => {
    const response = await platform.api(`${API}/interns`, { token: KEYS.carolInactive });
    expect(response.body).toEqual(refusal(403, 'forbidden'));
  });

  it('serves OAuth tokens with the interns scope, 403 insufficient_scope without it, 401 expired', async () => {
    const token = async (scope: string, ttl = '600') =>
      (
        await platform.admin<{ access_token: string }>(
          'oauth-token', '--member', 'alice', '--workspace', WS_MAIN, '--scope', scope, '--ttl', ttl,
        )
      ).access_token;

    const good = await token('interns vault:read');
    const listed = await platform.api(`${API}/interns`, { token: good });
    expect(listed.status).toBe(200);
    const fetched = await platform.api(`${API}/interns/${internId}`, { token: good });
    expect(fetched.body.created_by_you).toBe(true);

    const narrow = await token('vault:read');
    expect((await platform.api(`${API}/interns`, { token: narrow })).body).toEqual(refusal(403, 'insufficient_scope'));

    const shortLived = await token('interns', '1');
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const expired = await platform.api(`${API}/interns`, { token: shortLived });
    expect(expired.status).toBe(401);
    expect(expired.body).toEqual(UNAUTHENTICATED);
  });

  it('answers 403 for an inactive member with an OAuth token', async () => {
    const { access_token } = await platform.admin<{ access_token: string }>(
      'oauth-token', '--member', 'carol', '--workspace', WS_MAIN, '--scope', 'interns',
    );
    expect((await platform.api(`${API}/interns`, { token: access_token })).body).toEqual(refusal(403, 'forbidden'));
  });
});

describe('programme and lifecycle writes (checks 4 and 5)', () => {
  it('answers 404 on every intern path for an organization outside the programme', async () => {
    for (const [method, path, json] of [
      ['GET', '/interns', undefined],
      ['GET', `/interns/${randomUUID()}`, undefined],
      ['POST', '/interns', { name: 'x1' }],
      ['PATCH', `/interns/${randomUUID()}`, { name: 'x1' }],
    ] as const) {
      const response = await platform.api(`${API}${path}`, { token: KEYS.outside, method, json });
      expect(response.status).toBe(404);
      expect(response.body).toEqual(refusal(404, 'not_found'));
    }
    expect(WS_OUTSIDE).toBeDefined();
  });

  it('answers 404 on create and update when lifecycle writes are disabled, while reads work', async () => {
    expect((await platform.api(`${API}/interns`, { token: KEYS.readonly })).status).toBe(200);
    const created = await platform.api(`${API}/interns`, { token: KEYS.readonly, json: { name: 'nope' } });
    expect(created.body).toEqual(refusal(404, 'not_found'));
    const updated = await platform.api(`${API}/interns/${randomUUID()}`, {
      token: KEYS.readonly, method: 'PATCH', json: { name: 'nope' },
    });
    expect(updated.body).toEqual(refusal(404, 'not_found'));
    // Before body rules: even a malformed body gets the 404.
    const malformed = await platform.api(`${API}/interns`, {
      token: KEYS.readonly, raw: '{', headers: { 'content-type': 'application/json' },
    });
    expect(malformed.status).toBe(404);
    expect(WS_READONLY).toBeDefined();
  });
});

describe('body rules (check 6)', () => {
  const post = (raw: string | Buffer, headers: Record<string, string>) =>
    platform.api(`${API}/interns`, { token: KEYS.alice, raw, headers });

  it('answers 413 payload_too_large over 1048576 bytes, before the media type', async () => {
    const big = JSON.stringify({ name: 'big', description: 'x'.repeat(1048576) });
    for (const type of ['application/json', 'text/plain']) {
      const response = await post(big, { 'content-type': type });
      expect(response.status).toBe(413);
      expect(response.body).toEqual(refusal(413, 'payload_too_large'));
    }
  });

  it('answers 415 for a non-empty body without application/json, and accepts a charset', async () => {
    for (const headers of [{ 'content-type': 'text/plain' }, {}, { 'content-type': 'application/xml' }] as Record<string, string>[]) {
      const response = await post(JSON.stringify({ name: `m${randomUUID().slice(0, 6)}` }), headers);
      expect(response.status).toBe(415);
      expect(response.body).toEqual(refusal(415, 'unsupported_media_type'));
    }
    const withCharset = await post(JSON.stringify({ name: `c${randomUUID().slice(0, 6)}` }), {
      'content-type': 'application/json; charset=utf-8',
    });
    expect(withCharset.status).toBe(201);
  });

  it('answers 400 for malformed JSON and for an empty create body', async () => {
    expect((await post('{"name":', { 'content-type': 'application/json' })).body).toEqual(refusal(400, 'invalid_body'));
    expect((await post('', { 'content-type': 'application/json' })).body).toEqual(refusal(400, 'invalid_body'));
  });

  it('returns a correlation id on every answer', async () => {
    const response = await platform.api(`${API}/interns`, { token: KEYS.alice });
    expect(response.headers.get('x-correlation-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('unknown routes', () => {
  it('answer 404 in the envelope', async () => {
    const response = await platform.api(`${API}/nothing-here`, { token: KEYS.alice });
    expect(response.status).toBe(404);
    expect(response.body).toEqual(refusal(404, 'not_found'));
  });
});
