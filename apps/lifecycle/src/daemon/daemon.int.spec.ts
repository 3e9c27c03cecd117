import { generateKeyPairSync, randomUUID } from 'node:crypto';
import {
  ClaimDaemonNonceReply,
  DaemonAccessReply,
  DaemonAuditReply,
  DaemonSignReply,
  DaemonSigningKeysReply,
  DaemonTokenCheckReply,
  InternByHostnameReply,
  INVOKE_HEADERS,
  Principal,
  subjectsFor,
  TerminalAuditRequest,
} from '@interns/contracts';
import { DaemonSigningKey, InMemoryNonceStore, verifyInvokeRequest } from '@interns/daemon-signing';
import { RpcClient } from '@interns/messaging';
import { INTERN_DOMAIN, LifecycleHarness, principal, reasonOf } from '../testing/lifecycle.harness';

const TOKEN_TTL_MS = 1500;
const BODY_SHA256 = 'a'.repeat(64);

/**
 * Daemon access, signing, token checks and the audit through lifecycle's NATS subjects against the built
 * service (a configured signing key; tokens that live 1.5 s).
 */
describe('lifecycle: daemon access and signing', () => {
  let h: LifecycleHarness;
  let rpc: RpcClient;
  const WS = randomUUID();
  const creator = principal(WS);
  const alice = principal(WS, { kind: 'oauth', memberId: 'alice', keyId: null, scopes: ['interns', 'vault:read'] });
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();

  beforeAll(async () => {
    h = await LifecycleHarness.start();
    await h.startLifecycle({ DAEMON_TOKEN_TTL_MS: String(TOKEN_TTL_MS), DAEMON_SIGNING_KEY: pem });
    rpc = new RpcClient(h.nc);
  });

  afterAll(async () => {
    await h?.stop();
  });

  const subjects = () => subjectsFor(h.prefix).lifecycle;
  const context = (who: Principal) => ({ correlationId: randomUUID(), principal: who });
  const reveal = (who: Principal, internId: string) =>
    rpc.request<DaemonAccessReply>(subjects().daemonAccess, { context: context(who), internId }, { timeoutMs: 10_000 });
  const sign = (who: Principal, internId: string, body: object = { bodySha256: BODY_SHA256 }) =>
    rpc.request<DaemonSignReply>(subjects().daemonSign, { context: context(who), internId, body }, { timeoutMs: 10_000 });
  const check = (token: unknown) =>
    rpc.request<DaemonTokenCheckReply>(subjects().daemonTokenCheck, { token }, { timeoutMs: 10_000 });
  const audit = (internId: string) =>
    rpc.request<DaemonAuditReply>(subjects().daemonAudit, { internId }, { timeoutMs: 10_000 });

  const terminalAudit = (request: Omit<TerminalAuditRequest, 'correlationId'>) =>
    rpc.request<{ recorded: true }>(subjects().recordTerminalAudit, { ...request, correlationId: randomUUID() }, { timeoutMs: 10_000 });

  async function runningIntern(name: string): Promise<string> {
    const { intern } = await h.create(creator, { name, provision: true });
    await h.untilStatus(creator, intern.id, 'running');
    return intern.id;
  }

  it('reveals a token that checks valid until the intern is suspended, and audits every reveal', async () => {
    const id = await runningIntern('reveal');
    const revealed = await reveal(alice, id);
    expect(revealed).toEqual({
      origin: `https://reveal-${id.replace(/-/g, '').slice(0, 8)}.${INTERN_DOMAIN}`,
      token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
    });
    const checked = await check(revealed.token);
    expect(checked).toEqual({ valid: true, internId: id, memberId: 'alice', expiresAt: expect.any(String) });
    expect(Date.parse(checked.expiresAt ?? '') - Date.now()).toBeGreaterThan(TOKEN_TTL_MS - 1000);
    const stored = await h.sql<{ token_sha256: string }>(`SELECT token_sha256 FROM lifecycle.daemon_tokens WHERE intern_id = $1`, [id]);
    expect(stored).toEqual([{ token_sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
    expect(JSON.stringify(stored)).not.toContain(revealed.token);

    const second = await reveal(alice, id);
    expect(second.token).not.toBe(revealed.token);
    await h.suspend(creator, id);
    expect(await check(revealed.token)).toEqual({ valid: false, internId: null, memberId: null, expiresAt: null });
    expect(await check(second.token)).toMatchObject({ valid: false });
    expect(await reasonOf(reveal(alice, id))).toBe('intern_not_running');

    const { data } = await audit(id);
    expect(data).toEqual([
      { kind: 'daemon_access', member_id: 'alice', at: expect.stringMatching(/Z$/) },
      { kind: 'daemon_access', member_id: 'alice', at: expect.stringMatching(/Z$/) },
    ]);
    expect(Date.parse(data[0]?.at ?? '')).toBeLessThanOrEqual(Date.parse(data[1]?.at ?? ''));
  });

  it('lets a token expire after DAEMON_TOKEN_TTL_MS', async () => {
    const id = await runningIntern('expiry');
    const { token } = await reveal(alice, id);
    expect(await check(token)).toMatchObject({ valid: true });
    await new Promise((done) => setTimeout(done, TOKEN_TTL_MS + 100));
    expect(await check(token)).toMatchObject({ valid: false });
    expect(await check('not-a-token')).toMatchObject({ valid: false });
    expect(await check(42)).toMatchObject({ valid: false });
  });

  it('refuses in order: visibility, personal identity, vault:read (signing only), running', async () => {
    const id = await runningIntern('refusals');
    const stranger = principal(randomUUID(), { kind: 'oauth', memberId: 'alice', keyId: null, scopes: ['interns', 'vault:read'] });
    const noVault = { ...alice, scopes: ['interns'] };
    const userKey = principal(WS, { scopes: [] });
    const orgKey = principal(WS, { kind: 'organization', memberId: null });
    expect(await reasonOf(reveal(stranger, id))).toBe('not_found');
    expect(await reasonOf(sign(stranger, id))).toBe('not_found');
    expect(await reasonOf(reveal(alice, 'not-a-uuid'))).toBe('not_found');
    expect(await reasonOf(reveal(userKey, id))).toBe('personal_identity_required');
    expect(await reasonOf(sign(orgKey, id))).toBe('personal_identity_required');
    expect(await reasonOf(sign(noVault, id))).toBe('insufficient_scope');
    expect(await reasonOf(reveal(noVault, id))).toBe('ok');

    await h.suspend(creator, id);
    await h.untilStatus(creator, id, 'stopped');
    expect(await reasonOf(sign(noVault, id))).toBe('insufficient_scope');
    expect(await reasonOf(sign(alice, id))).toBe('intern_not_running');
    expect(await reasonOf(reveal(userKey, id))).toBe('personal_identity_required');
    expect((await audit(id)).data.map((entry) => entry.kind)).toEqual(['daemon_access']);
  });

  it('signs v1 and v2 with the configured key, verifiable against the served JWKS', async () => {
    const id = await runningIntern('signing');
    const jwks = await rpc.request<DaemonSigningKeysReply>(subjects().daemonSigningKeys, {}, { timeoutMs: 10_000 });
    expect(jwks).toEqual(DaemonSigningKey.fromPem(pem).jwks());

    const v1 = await sign(alice, id);
    expect(Object.keys(v1).sort()).toEqual([INVOKE_HEADERS.signature, INVOKE_HEADERS.timestamp, INVOKE_HEADERS.user].sort());
    expect(v1[INVOKE_HEADERS.user]).toBe('alice');
    expect(Math.abs(Number(v1[INVOKE_HEADERS.timestamp]) - Date.now() / 1000)).toBeLessThan(5);
    const nonces = new InMemoryNonceStore();
    const common = { internId: id, bodySha256: BODY_SHA256, jwks, nonces };
    expect(await verifyInvokeRequest({ ...common, headers: { ...v1 } })).toMatchObject({ ok: false, reason: 'version_too_old' });
    expect(await verifyInvokeRequest({ ...common, minVersion: 'v1', headers: { ...v1 } })).toMatchObject({
      ok: true,
      version: 'v1',
      user: 'alice',
    });

    const v2 = await sign(alice, id, { bodySha256: BODY_SHA256, route: { method: 'POST', path: '/hooks/x' } });
    expect(v2[INVOKE_HEADERS.nonce]).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const route = { method: 'POST', path: '/hooks/x' };
    expect(await verifyInvokeRequest({ ...common, ...route, headers: { ...v2 } })).toMatchObject({ ok: true, version: 'v2' });
    expect(await verifyInvokeRequest({ ...common, ...route, headers: { ...v2 } })).toMatchObject({ ok: false, reason: 'nonce_reused' });
    const again = await sign(alice, id, { bodySha256: BODY_SHA256, route });
    expect(again[INVOKE_HEADERS.nonce]).not.toBe(v2[INVOKE_HEADERS.nonce]);

    expect((await audit(id)).data.map((entry) => entry.kind)).toEqual(['signing', 'signing', 'signing']);
  });

  it('keeps the audit of a deleted intern; an id with no intern and no history is not_found', async () => {
    const id = await runningIntern('deleted');
    const { token } = await reveal(alice, id);
    await sign(alice, id);
    await h.delete(creator, id);
    expect(await check(token)).toMatchObject({ valid: false });
    await h.untilGone(creator, id);
    expect((await audit(id)).data.map((entry) => entry.kind)).toEqual(['daemon_access', 'signing']);
    expect(await reasonOf(audit(randomUUID()))).toBe('not_found');
    expect(await reasonOf(audit('nope'))).toBe('not_found');
    const quiet = await runningIntern('quiet');
    expect(await audit(quiet)).toEqual({ data: [] });
  });

  describe('the door (interface section 20)', () => {
    const byHostname = (hostname: unknown) =>
      rpc.request<InternByHostnameReply>(subjects().internByHostname, { hostname }, { timeoutMs: 10_000 });
    const claim = (nonce: unknown, expiresAt: unknown) =>
      rpc.request<ClaimDaemonNonceReply>(subjects().claimDaemonNonce, { nonce, expiresAt }, { timeoutMs: 10_000 });

    it('names the intern behind a hostname, and no one behind any other name', async () => {
      const id = await runningIntern('door');
      const hostname = `door-${id.replace(/-/g, '').slice(0, 8)}.${INTERN_DOMAIN}`;
      expect(await byHostname(hostname)).toEqual({
        intern: { id, name: 'door', status: 'running', organizationId: creator.organizationId, workspaceId: WS },
      });
      for (const other of [`nobody-00000000.${INTERN_DOMAIN}`, hostname.toUpperCase(), '', 42, 'x'.repeat(300)]) {
        expect(await byHostname(other)).toEqual({ intern: null });
      }
    });

    it('lets exactly one of many concurrent claims of a nonce win, and a claim past its window be made again', async () => {
      const nonce = `n-${randomUUID()}`;
      const future = Math.floor(Date.now() / 1000) + 60;
      const answers = await Promise.all(Array.from({ length: 8 }, () => claim(nonce, future)));
      expect(answers.filter((answer) => answer.claimed)).toHaveLength(1);
      expect(await claim(nonce, future)).toEqual({ claimed: false });

      const stale = `s-${randomUUID()}`;
      expect(await claim(stale, Math.floor(Date.now() / 1000) - 1)).toEqual({ claimed: true });
      expect(await claim(stale, future)).toEqual({ claimed: true });
      expect(await claim(stale, future)).toEqual({ claimed: false });
    });

    it('refuses a claim that is no nonce', async () => {
      for (const [nonce, expiresAt] of [['short', 1], ['with space in it!!', 1], [`n-${randomUUID()}`, -1], [`n-${randomUUID()}`, 'soon']]) {
        expect(await reasonOf(claim(nonce, expiresAt))).toBe('invalid_body');
      }
    });
  });

  it("records terminals attached and detached (as runs reports them) in the intern's audit, beside its reveals", async () => {
    const id = await runningIntern('terminal');
    await reveal(alice, id);
    const attachedAt = new Date().toISOString();
    await terminalAudit({ kind: 'terminal_attached', internId: id, memberId: 'alice', at: attachedAt });
    await terminalAudit({ kind: 'terminal_detached', internId: id.toUpperCase(), memberId: 'alice', at: new Date(Date.now() + 5).toISOString() });
    const { data } = await audit(id);
    expect(data.map((entry) => [entry.kind, entry.member_id])).toEqual([
      ['daemon_access', 'alice'],
      ['terminal_attached', 'alice'],
      ['terminal_detached', 'alice'],
    ]);
    expect(data[1].at).toBe(attachedAt);
    expect(await reasonOf(terminalAudit({ kind: 'signing' as never, internId: id, memberId: 'alice', at: attachedAt }))).toBe('invalid_body');
    expect(await reasonOf(terminalAudit({ kind: 'terminal_attached', internId: 'nope', memberId: 'alice', at: attachedAt }))).toBe('invalid_body');
    expect(await reasonOf(terminalAudit({ kind: 'terminal_attached', internId: id, memberId: 'alice', at: 'yesterday' }))).toBe('invalid_body');
    expect((await audit(id)).data).toHaveLength(3);
  });
});
