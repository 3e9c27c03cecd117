import { generateKeyPairSync } from 'node:crypto';
import { INVOKE_HEADERS } from '@interns/contracts';
import { INVOKE_KEY_ID_HEADER, verifyInvokeRequest, VerifyInvokeRequestOptions } from './invoke-verifier';
import { InMemoryNonceStore } from './nonce-store';
import { DaemonSigningKey, DaemonSigningKeyring } from './signing-key';
import { sha256Hex, signingStringV1, signingStringV2 } from './signing-strings';

const INTERN = '0f0e0d0c-0000-4000-8000-000000000001';
const NOW = 1_760_000_000;
const BODY = '{"input":"hello"}';
const ROUTE = { method: 'POST', path: '/hooks/run' };
const NONCE = 'bm9uY2Utbm9uY2Utbm9uY2U';

function newKey(): DaemonSigningKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  return DaemonSigningKey.fromPem(privateKey.export({ format: 'pem', type: 'pkcs8' }).toString());
}

const key = newKey();

/** What the sign route answers, built the way lifecycle builds it. */
function signedHeaders(options: { at?: number; user?: string; body?: string; v2?: boolean; signer?: DaemonSigningKey } = {}) {
  const signer = options.signer ?? key;
  const timestamp = String(options.at ?? NOW);
  const user = options.user ?? 'alice';
  const bodySha256 = sha256Hex(options.body ?? BODY);
  const headers: Record<string, string> = {
    [INVOKE_HEADERS.signature]: signer.sign(signingStringV1({ internId: INTERN, timestamp, user, bodySha256 })),
    [INVOKE_HEADERS.timestamp]: timestamp,
    [INVOKE_HEADERS.user]: user,
  };
  if (options.v2) {
    headers[INVOKE_HEADERS.nonce] = NONCE;
    headers[INVOKE_HEADERS.signatureV2] = signer.sign(
      signingStringV2({ internId: INTERN, timestamp, nonce: NONCE, user, ...ROUTE, bodySha256 }),
    );
  }
  return headers;
}

function verify(headers: VerifyInvokeRequestOptions['headers'], overrides: Partial<VerifyInvokeRequestOptions> = {}) {
  return verifyInvokeRequest({
    headers,
    internId: INTERN,
    bodySha256: sha256Hex(BODY),
    ...ROUTE,
    jwks: key.jwks(),
    nowSeconds: NOW,
    nonces: new InMemoryNonceStore({ nowSeconds: () => NOW }),
    ...overrides,
  });
}

/** A daemon that still accepts v1 (its callers never name a route). */
function verifyV1(headers: VerifyInvokeRequestOptions['headers'], overrides: Partial<VerifyInvokeRequestOptions> = {}) {
  return verify(headers, { minVersion: 'v1', ...overrides });
}

describe('verifyInvokeRequest', () => {
  it('accepts a v1 signature only with minVersion v1, and names the user', async () => {
    expect(await verifyV1(signedHeaders())).toEqual({ ok: true, version: 'v1', user: 'alice', timestamp: NOW, nonce: null });
    expect(await verify(signedHeaders())).toMatchObject({ ok: false, reason: 'version_too_old' });
  });

  it('refuses by default a v2 signing whose v2 headers were stripped on the way (no route binding left)', async () => {
    const { [INVOKE_HEADERS.nonce]: _nonce, [INVOKE_HEADERS.signatureV2]: _v2, ...stripped } = signedHeaders({ v2: true });
    expect(await verify(stripped, { method: 'GET', path: '/admin/export' })).toMatchObject({ ok: false, reason: 'version_too_old' });
    const { [INVOKE_HEADERS.nonce]: _n, ...halfStripped } = signedHeaders({ v2: true });
    expect(await verify(halfStripped)).toMatchObject({ ok: false, reason: 'version_too_old' });
  });

  it('accepts a v2 signature (header names in any case) and checks it against method and path', async () => {
    const headers = Object.fromEntries(Object.entries(signedHeaders({ v2: true })).map(([k, v]) => [k.toUpperCase(), v]));
    expect(await verify(headers)).toEqual({ ok: true, version: 'v2', user: 'alice', timestamp: NOW, nonce: NONCE });
    expect(await verify(signedHeaders({ v2: true }), { path: '/hooks/other' })).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(await verify(signedHeaders({ v2: true }), { method: 'PUT' })).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(await verify(signedHeaders({ v2: true }), { method: undefined, path: undefined })).toMatchObject({
      ok: false,
      reason: 'route_required',
    });
  });

  it('reads fetch Headers too', async () => {
    expect(await verify(new Headers(signedHeaders({ v2: true })))).toMatchObject({ ok: true, version: 'v2' });
  });

  it('refuses a replayed nonce, and only claims it once the signature checked out', async () => {
    const nonces = new InMemoryNonceStore({ nowSeconds: () => NOW });
    const forged = { ...signedHeaders({ v2: true }), [INVOKE_HEADERS.signatureV2]: signedHeaders({ v2: true, user: 'mallory' })[INVOKE_HEADERS.signatureV2] };
    expect(await verify(forged, { nonces })).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(nonces.size).toBe(0);
    expect(await verify(signedHeaders({ v2: true }), { nonces })).toMatchObject({ ok: true });
    expect(await verify(signedHeaders({ v2: true }), { nonces })).toEqual({
      ok: false,
      reason: 'nonce_reused',
      message: 'the nonce was used before',
    });
  });

  it('refuses a timestamp outside the 60 s window, either way, and accepts one at its edge', async () => {
    expect(await verify(signedHeaders({ at: NOW - 61, v2: true }))).toMatchObject({ ok: false, reason: 'timestamp_out_of_window' });
    expect(await verify(signedHeaders({ at: NOW + 61, v2: true }))).toMatchObject({ ok: false, reason: 'timestamp_out_of_window' });
    expect(await verify(signedHeaders({ at: NOW - 60, v2: true }))).toMatchObject({ ok: true });
    expect(await verify(signedHeaders({ at: NOW - 30, v2: true }), { maxSkewSeconds: 10 })).toMatchObject({
      ok: false,
      reason: 'timestamp_out_of_window',
    });
  });

  it('refuses a tampered body, user, timestamp or intern', async () => {
    const tamperedBody = sha256Hex('{"input":"rm -rf /"}');
    expect(await verifyV1(signedHeaders(), { bodySha256: tamperedBody })).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(await verify(signedHeaders({ v2: true }), { bodySha256: tamperedBody })).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(await verify({ ...signedHeaders({ v2: true }), [INVOKE_HEADERS.user]: 'bob' })).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(await verify({ ...signedHeaders({ v2: true }), [INVOKE_HEADERS.timestamp]: String(NOW - 1) })).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
    expect(await verify(signedHeaders({ v2: true }), { internId: '0f0e0d0c-0000-4000-8000-000000000002' })).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('refuses a signature by a key outside the JWKS, and a JWKS without a usable key', async () => {
    expect(await verify(signedHeaders({ signer: newKey(), v2: true }))).toMatchObject({ ok: false, reason: 'bad_signature' });
    expect(await verify(signedHeaders({ v2: true }), { jwks: { keys: [{ kty: 'RSA', n: 'x', e: 'AQAB' }] } })).toMatchObject({
      ok: false,
      reason: 'no_usable_key',
    });
  });

  it('during a rotation verifies signatures of the previous key (kid named or not) and of the new one', async () => {
    const next = newKey();
    const rotated = new DaemonSigningKeyring(next, key).jwks();
    expect(rotated.keys.map((jwk) => jwk.kid)).toEqual([next.kid, key.kid]);
    expect(await verify(signedHeaders({ v2: true }), { jwks: rotated })).toMatchObject({ ok: true });
    expect(await verify({ ...signedHeaders({ v2: true }), [INVOKE_KEY_ID_HEADER]: key.kid }, { jwks: rotated })).toMatchObject({ ok: true });
    expect(await verify(signedHeaders({ v2: true, signer: next }), { jwks: rotated })).toMatchObject({ ok: true });
    // Once the previous key is retired, what it signed stops verifying.
    expect(await verify(signedHeaders({ v2: true }), { jwks: new DaemonSigningKeyring(next).jwks() })).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('refuses an unknown kid, and a kid that names a key other than the signer', async () => {
    const next = newKey();
    const rotated = new DaemonSigningKeyring(next, key).jwks();
    expect(await verify({ ...signedHeaders({ v2: true }), [INVOKE_KEY_ID_HEADER]: 'no-such-kid' }, { jwks: rotated })).toMatchObject({
      ok: false,
      reason: 'unknown_key',
    });
    expect(await verify({ ...signedHeaders({ v2: true }), [INVOKE_KEY_ID_HEADER]: next.kid }, { jwks: rotated })).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
    expect(
      await verify({ ...signedHeaders({ v2: true }), [INVOKE_KEY_ID_HEADER]: [key.kid, key.kid] }, { jwks: rotated }),
    ).toMatchObject({ ok: false, reason: 'malformed_header' });
  });

  it('refuses missing, repeated and malformed headers', async () => {
    const { [INVOKE_HEADERS.signature]: _signature, ...unsigned } = signedHeaders();
    expect(await verifyV1(unsigned)).toMatchObject({ ok: false, reason: 'missing_header' });
    const { [INVOKE_HEADERS.timestamp]: _timestamp, ...untimed } = signedHeaders();
    expect(await verifyV1(untimed)).toMatchObject({ ok: false, reason: 'missing_header' });
    expect(await verifyV1({ ...signedHeaders(), [INVOKE_HEADERS.timestamp]: ['1', '2'] })).toMatchObject({
      ok: false,
      reason: 'malformed_header',
    });
    expect(await verifyV1({ ...signedHeaders(), [INVOKE_HEADERS.timestamp]: '17e8' })).toMatchObject({ ok: false, reason: 'malformed_header' });
    expect(await verifyV1({ ...signedHeaders(), [INVOKE_HEADERS.user]: 'alice\nbob' })).toMatchObject({ ok: false, reason: 'malformed_header' });
    expect(await verifyV1({ ...signedHeaders(), [INVOKE_HEADERS.signature]: 'c2ln' })).toMatchObject({ ok: false, reason: 'malformed_header' });
    expect(await verify({ ...signedHeaders({ v2: true }), [INVOKE_HEADERS.nonce]: 'short' })).toMatchObject({
      ok: false,
      reason: 'malformed_header',
    });
  });

  it('with minVersion v1, falls back to v1 when only half of the v2 pair is present', async () => {
    const { [INVOKE_HEADERS.nonce]: _nonce, ...halfV2 } = signedHeaders({ v2: true });
    expect(await verifyV1(halfV2)).toMatchObject({ ok: true, version: 'v1' });
  });
});

describe('InMemoryNonceStore', () => {
  it('forgets a nonce once it expired', async () => {
    let now = NOW;
    const store = new InMemoryNonceStore({ nowSeconds: () => now });
    expect(await store.claim('n', NOW + 10)).toBe(true);
    expect(await store.claim('n', NOW + 10)).toBe(false);
    now = NOW + 11;
    expect(await store.claim('other', NOW + 20)).toBe(true);
    expect(store.size).toBe(1);
    expect(await store.claim('n', NOW + 30)).toBe(true);
  });
});
