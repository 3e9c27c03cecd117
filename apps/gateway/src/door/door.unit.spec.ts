/**
 * The door's pieces against a stand-in for lifecycle (the RPC client): the hostname directory and the token cache
 * (what they cache, for how long, what an event drops), the gate's check order, and the signature check with a real
 * Ed25519 key and a controlled clock (the stale timestamp an end-to-end test cannot forge).
 */
import { generateKeyPairSync } from 'node:crypto';
import { DOOR_INVOKE_ROUTE, INVOKE_HEADERS, subjectsFor } from '@interns/contracts';
import type { DaemonTokenCheckReply, DoorIntern } from '@interns/contracts';
import { DaemonSigningKey, sha256Hex, signingStringV1, signingStringV2 } from '@interns/daemon-signing';
import type { RpcClient } from '@interns/messaging';
import type { AuthFailureLimiter } from '../auth/auth-failure-limiter';
import { DaemonTokenCache } from './daemon-token-cache';
import { DoorGate, isDoorAccess } from './door-gate';
import { DoorSignatures } from './door-signatures';
import { InternDirectory } from './intern-directory';

const subjects = subjectsFor('test').lifecycle;
const HOST = 'ada-0f0e0d0c.interns.localhost';
const INTERN: DoorIntern = {
  id: '0f0e0d0c-0000-4000-8000-000000000001',
  name: 'ada',
  status: 'running',
  organizationId: 'acme',
  workspaceId: '11111111-1111-4111-8111-111111111111',
};
const TOKEN = 'dGhpcy1pcy1hLWRhZW1vbi10b2tlbi1mb3ItdGVzdHM';
const NOW_MS = 1_760_000_000_000;
const deadline = { timeoutMs: 1000, correlationId: 'c-1' };

/** Lifecycle as the door's lookups see it; every request is recorded. */
class FakeLifecycle {
  readonly asked: { subject: string; data: unknown }[] = [];
  interns = new Map<string, DoorIntern>([[HOST, INTERN]]);
  tokens = new Map<string, DaemonTokenCheckReply>([
    [TOKEN, { valid: true, internId: INTERN.id, memberId: 'alice', expiresAt: new Date(NOW_MS + 60_000).toISOString() }],
  ]);
  jwks: unknown = { keys: [] };
  readonly nonces = new Set<string>();

  readonly rpc = {
    request: async (subject: string, data: Record<string, unknown>) => {
      this.asked.push({ subject, data });
      if (subject === subjects.internByHostname) return { intern: this.interns.get(data.hostname as string) ?? null };
      if (subject === subjects.daemonTokenCheck) {
        return this.tokens.get(data.token as string) ?? { valid: false, internId: null, memberId: null, expiresAt: null };
      }
      if (subject === subjects.daemonSigningKeys) return this.jwks;
      if (subject === subjects.claimDaemonNonce) {
        const claimed = !this.nonces.has(data.nonce as string);
        this.nonces.add(data.nonce as string);
        return { claimed };
      }
      throw new Error(`unexpected subject ${subject}`);
    },
  } as unknown as RpcClient;

  count(subject: string): number {
    return this.asked.filter((request) => request.subject === subject).length;
  }
}

let now = NOW_MS;
const clock = () => now;
beforeEach(() => {
  now = NOW_MS;
});

describe('InternDirectory', () => {
  it('asks lifecycle once per TTL, and again once the intern changed (an event)', async () => {
    const lifecycle = new FakeLifecycle();
    const directory = new InternDirectory({ rpc: lifecycle.rpc, subjects, ttlMs: 2000, now: clock });
    expect(await directory.lookup(HOST, deadline)).toEqual(INTERN);
    expect(await directory.lookup(HOST, deadline)).toEqual(INTERN);
    expect(lifecycle.count(subjects.internByHostname)).toBe(1);
    lifecycle.interns.set(HOST, { ...INTERN, status: 'stopped' });
    directory.evictIntern(INTERN.id);
    expect((await directory.lookup(HOST, deadline))?.status).toBe('stopped');
    now += 2000;
    await directory.lookup(HOST, deadline);
    expect(lifecycle.count(subjects.internByHostname)).toBe(3);
  });

  it('remembers unknown names until the TTL or any status change (a provisioning may have given the name)', async () => {
    const lifecycle = new FakeLifecycle();
    const directory = new InternDirectory({ rpc: lifecycle.rpc, subjects, ttlMs: 2000, now: clock });
    const fresh = 'bob-0a0b0c0d.interns.localhost';
    expect(await directory.lookup(fresh, deadline)).toBeNull();
    expect(await directory.lookup(fresh, deadline)).toBeNull();
    expect(lifecycle.count(subjects.internByHostname)).toBe(1);
    lifecycle.interns.set(fresh, { ...INTERN, id: '0a0b0c0d-0000-4000-8000-000000000002' });
    directory.evictIntern('0a0b0c0d-0000-4000-8000-000000000002');
    expect((await directory.lookup(fresh, deadline))?.id).toBe('0a0b0c0d-0000-4000-8000-000000000002');
  });

  it('never asks about a name DNS would not allow', async () => {
    const lifecycle = new FakeLifecycle();
    const directory = new InternDirectory({ rpc: lifecycle.rpc, subjects, ttlMs: 2000, now: clock });
    expect(await directory.lookup('a_b.interns.localhost', deadline)).toBeNull();
    expect(lifecycle.asked).toEqual([]);
  });
});

describe('DaemonTokenCache', () => {
  it('caches a verdict for the TTL, honours the expiry from the cache, and drops an intern\'s tokens on its event', async () => {
    const lifecycle = new FakeLifecycle();
    const tokens = new DaemonTokenCache({ rpc: lifecycle.rpc, subjects, ttlMs: 2000, now: clock });
    expect(await tokens.check(TOKEN, deadline)).toMatchObject({ internId: INTERN.id, memberId: 'alice' });
    lifecycle.tokens.delete(TOKEN);
    // Revoked in lifecycle, still trusted within the TTL...
    expect(await tokens.check(TOKEN, deadline)).not.toBeNull();
    now += 2000;
    // ...and refused after it.
    expect(await tokens.check(TOKEN, deadline)).toBeNull();

    lifecycle.tokens.set(TOKEN, { valid: true, internId: INTERN.id, memberId: 'alice', expiresAt: new Date(now + 1000).toISOString() });
    const fresh = new DaemonTokenCache({ rpc: lifecycle.rpc, subjects, ttlMs: 60_000, now: clock });
    expect(await fresh.check(TOKEN, deadline)).not.toBeNull();
    now += 1000;
    expect(await fresh.check(TOKEN, deadline)).toBeNull();

    now -= 1000;
    const evicting = new DaemonTokenCache({ rpc: lifecycle.rpc, subjects, ttlMs: 60_000, now: clock });
    await evicting.check(TOKEN, deadline);
    lifecycle.tokens.delete(TOKEN);
    evicting.evictIntern(INTERN.id);
    expect(await evicting.check(TOKEN, deadline)).toBeNull();
  });
});

describe('DoorGate', () => {
  function gate(lifecycle: FakeLifecycle) {
    const failures: string[] = [];
    const limiter = { retryAfterSeconds: () => null, recordFailure: async (address: string) => void failures.push(address) };
    const lookups = { rpc: lifecycle.rpc, subjects, ttlMs: 2000, now: clock };
    const door = new DoorGate(new InternDirectory(lookups), new DaemonTokenCache(lookups), limiter as unknown as AuthFailureLimiter);
    const admit = (authorization: string | undefined, hostname = HOST) => door.admit({ hostname, authorization, clientAddress: '10.0.0.1', deadline });
    return { admit, failures };
  }

  it('lets a running intern\'s own token through as its member, in the intern\'s workspace', async () => {
    const access = await gate(new FakeLifecycle()).admit(`Bearer ${TOKEN}`);
    expect(isDoorAccess(access) && access.principal).toEqual({
      kind: 'oauth',
      organizationId: 'acme',
      workspaceId: INTERN.workspaceId,
      memberId: 'alice',
      keyId: null,
      internId: null,
      scopes: ['interns'],
      chatappInstallRequired: false,
    });
  });

  it('checks in the contract\'s order: unknown host 404, not running 409 (no token asked), then the token 401', async () => {
    const lifecycle = new FakeLifecycle();
    const { admit, failures } = gate(lifecycle);
    expect(await admit(`Bearer ${TOKEN}`, 'nobody-00000000.interns.localhost')).toMatchObject({
      status: 404,
      body: { error: { metadata: { reason: 'not_found', retryable: false } } },
    });
    lifecycle.interns.set('stopped-0f0e0d0c.interns.localhost', { ...INTERN, status: 'stopped' });
    expect(await admit(undefined, 'stopped-0f0e0d0c.interns.localhost')).toMatchObject({
      status: 409,
      body: { error: { metadata: { reason: 'intern_not_running' } } },
    });
    expect(lifecycle.count(subjects.daemonTokenCheck)).toBe(0);
    for (const authorization of [undefined, 'Bearer', `Basic ${TOKEN}`, 'Bearer unknown-token-unknown-token', `Bearer ${TOKEN}!`]) {
      expect(await admit(authorization)).toEqual({ status: 401, body: { error: { code: 401, message: 'invalid or missing API key' } }, headers: {} });
    }
    expect(failures).toHaveLength(5);
  });

  it("refuses another intern's token with 401", async () => {
    const lifecycle = new FakeLifecycle();
    lifecycle.tokens.set(TOKEN, { valid: true, internId: '0a0b0c0d-0000-4000-8000-000000000009', memberId: 'alice', expiresAt: new Date(NOW_MS + 60_000).toISOString() });
    expect(await gate(lifecycle).admit(`Bearer ${TOKEN}`)).toMatchObject({ status: 401 });
  });

  it('answers 409, not 401, for a token refused because its intern was just suspended (cached status not yet caught up)', async () => {
    const lifecycle = new FakeLifecycle();
    const { admit } = gate(lifecycle);
    expect(isDoorAccess(await admit(`Bearer ${TOKEN}`))).toBe(true);
    // Suspended: lifecycle ends the tokens; the directory still holds `running` for this hostname.
    lifecycle.interns.set(HOST, { ...INTERN, status: 'stopped' });
    lifecycle.tokens.delete(TOKEN);
    const other = 'b3RoZXItdG9rZW4tb3RoZXItdG9rZW4tb3RoZXI';
    expect(await admit(`Bearer ${other}`)).toMatchObject({ status: 409, body: { error: { metadata: { reason: 'intern_not_running' } } } });
  });
});

describe('DoorSignatures', () => {
  const { privateKey } = generateKeyPairSync('ed25519');
  const key = DaemonSigningKey.fromPem(privateKey.export({ format: 'pem', type: 'pkcs8' }).toString());
  const BODY = Buffer.from('{"input":"hello"}');
  let nonceCounter = 0;

  /** Headers as `/daemon/sign` answers them, signed at `at` (unix seconds). */
  function signed(options: { at?: number; user?: string; body?: Buffer; path?: string; v2?: boolean; signer?: DaemonSigningKey } = {}) {
    const signer = options.signer ?? key;
    const timestamp = String(options.at ?? Math.floor(NOW_MS / 1000));
    const user = options.user ?? 'alice';
    const bodySha256 = sha256Hex(options.body ?? BODY);
    const nonce = `nonce-${String(nonceCounter++).padStart(12, '0')}`;
    const headers: Record<string, string> = {
      [INVOKE_HEADERS.signature]: signer.sign(signingStringV1({ internId: INTERN.id, timestamp, user, bodySha256 })),
      [INVOKE_HEADERS.timestamp]: timestamp,
      [INVOKE_HEADERS.user]: user,
    };
    if (options.v2 ?? true) {
      headers[INVOKE_HEADERS.nonce] = nonce;
      headers[INVOKE_HEADERS.signatureV2] = signer.sign(
        signingStringV2({ internId: INTERN.id, timestamp, nonce, user, method: 'POST', path: options.path ?? DOOR_INVOKE_ROUTE.path, bodySha256 }),
      );
    }
    return headers;
  }

  function setup() {
    const lifecycle = new FakeLifecycle();
    lifecycle.jwks = key.jwks();
    const signatures = new DoorSignatures({ rpc: lifecycle.rpc, subjects, ttlMs: 2000, now: clock });
    const check = (headers: Record<string, string>, body = BODY, target: string = DOOR_INVOKE_ROUTE.path) =>
      signatures.check({ headers, internId: INTERN.id, memberId: 'alice', body, target, deadline });
    return { lifecycle, check };
  }

  const invalid = (message: string | RegExp) => ({
    status: 401,
    body: { error: { code: 401, message: expect.stringMatching(message), metadata: { reason: 'invalid_signature', retryable: false } } },
    headers: {},
  });

  it('accepts a v2 signature over this body and route once; the replayed nonce is refused', async () => {
    const { lifecycle, check } = setup();
    const headers = signed();
    expect(await check(headers)).toBeNull();
    expect(lifecycle.nonces.has(headers[INVOKE_HEADERS.nonce])).toBe(true);
    expect(await check(headers)).toEqual(invalid(/used before/));
  });

  it('refuses a changed byte, another path or query, v1 headers only, and an old or future timestamp', async () => {
    const { lifecycle, check } = setup();
    expect(await check(signed(), Buffer.from('{"input":"hellO"}'))).toEqual(invalid(/does not match/));
    expect(await check(signed({ path: '/api/other' }))).toEqual(invalid(/does not match/));
    expect(await check(signed(), BODY, '/api/invoke?x=1')).toEqual(invalid(/does not match/));
    expect(await check(signed({ v2: false }))).toEqual(invalid(/v2 signature/));
    const seconds = Math.floor(NOW_MS / 1000);
    expect(await check(signed({ at: seconds - 61 }))).toEqual(invalid(/timestamp/));
    expect(await check(signed({ at: seconds + 61 }))).toEqual(invalid(/timestamp/));
    expect(await check(signed({ at: seconds - 60 }))).toBeNull();
    // Only the one that passed claimed its nonce: a refused request burns none.
    expect(lifecycle.nonces.size).toBe(1);
  });

  it("refuses a signature made for another member before claiming its nonce", async () => {
    const { lifecycle, check } = setup();
    expect(await check(signed({ user: 'bob' }))).toEqual(invalid(/token's member/));
    expect(lifecycle.count(subjects.claimDaemonNonce)).toBe(0);
  });

  it('reuses the JWKS within the TTL, and asks again when a signature needs a key it does not hold (a rotation)', async () => {
    const { lifecycle, check } = setup();
    expect(await check(signed())).toBeNull();
    expect(await check(signed())).toBeNull();
    expect(lifecycle.count(subjects.daemonSigningKeys)).toBe(1);
    const { privateKey: next } = generateKeyPairSync('ed25519');
    const rotated = DaemonSigningKey.fromPem(next.export({ format: 'pem', type: 'pkcs8' }).toString());
    lifecycle.jwks = rotated.jwks();
    expect(await check(signed({ signer: rotated }))).toBeNull();
    expect(lifecycle.count(subjects.daemonSigningKeys)).toBe(2);
    // A forgery still fails after the refetch.
    const { privateKey: stranger } = generateKeyPairSync('ed25519');
    expect(await check(signed({ signer: DaemonSigningKey.fromPem(stranger.export({ format: 'pem', type: 'pkcs8' }).toString()) }))).toEqual(
      invalid(/does not match/),
    );
  });
});
