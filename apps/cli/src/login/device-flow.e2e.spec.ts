/**
 * End to end: `deviceFlowLogin` against a real authorization server (oidc-provider, device flow on, JWT access
 * tokens for interns-api) and the platform configured with only `OIDC_ISSUER` pointing at it (keys found through
 * discovery). A user approving over HTTP yields a token the gateway accepts as that member; a denial, an expired
 * code, a wait that runs out, a cancel and an issuer without the device flow each end in their own clear error.
 */
import { approveDeviceLogin, freePort, OidcProviderServer, Platform, type DeviceApproval, type DeviceApprovalOutcome } from '@interns/testing';
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { CLI_ENTRY, CliHome } from '../e2e/cli.fixture';
import { DeviceFlowError, deviceFlowLogin, supportsDeviceFlow, type DeviceFlowLoginOptions, type DeviceFlowTokens, type DeviceUserCode } from './device-flow';

const API = '/api/v1';
const WORKSPACE = '11111111-1111-4111-8111-111111111111';
const ALICE_KEY = 'uk_alice_device_flow';
const IDENTITIES = {
  organizations: [{ id: 'acme', name: 'Acme', programme: true, lifecycle_writes: true }],
  workspaces: [{ id: WORKSPACE, organization_id: 'acme', name: 'main' }],
  members: [{ id: 'alice', organization_id: 'acme', active: true }],
  api_keys: [{ key: ALICE_KEY, kind: 'user', organization_id: 'acme', workspace_id: WORKSPACE, member_id: 'alice' }],
};

let issuer: OidcProviderServer;
let platform: Platform;

beforeAll(async () => {
  issuer = await OidcProviderServer.start({ accounts: [{ member: 'alice', organizationId: 'acme', workspaceId: WORKSPACE }] });
  // Only the external issuer is trusted: no local development issuer, keys through the issuer's discovery document.
  platform = await Platform.start({ services: ['lifecycle', 'gateway'], env: { OIDC_ISSUER: issuer.issuer, OIDC_LOCAL_DEV: 'false' } });
  await platform.applyIdentities(IDENTITIES);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
  await issuer?.stop();
});

/** Runs the login while a user (the helper) acts on the code it shows; a failing helper cancels the login. */
async function loginWithUser(
  options: Partial<DeviceFlowLoginOptions> & { issuer: string },
  user: Omit<DeviceApproval, 'verificationUri' | 'userCode'>,
): Promise<{ login: PromiseSettledResult<DeviceFlowTokens>; approval: DeviceApprovalOutcome; shown: DeviceUserCode }> {
  const userGaveUp = new AbortController();
  let approval: Promise<DeviceApprovalOutcome> | null = null;
  let shown: DeviceUserCode | null = null;
  const [login] = await Promise.allSettled([
    deviceFlowLogin({
      signal: AbortSignal.any([userGaveUp.signal, AbortSignal.timeout(20_000)]),
      ...options,
      onUserCode: (code) => {
        shown = code;
        approval = approveDeviceLogin({ verificationUri: code.verificationUri, userCode: code.userCode, ...user });
        approval.catch(() => userGaveUp.abort());
      },
    }),
  ]);
  if (approval === null || shown === null) throw new Error(`the login never showed a code: ${String((login as PromiseRejectedResult).reason)}`);
  return { login, approval: await approval, shown };
}

function failureOf(result: PromiseSettledResult<unknown>): DeviceFlowError {
  if (result.status === 'fulfilled') throw new Error('the login succeeded');
  expect(result.reason).toBeInstanceOf(DeviceFlowError);
  return result.reason as DeviceFlowError;
}

describe('device-flow login against a real issuer', () => {
  it('logs in as the approving member with a token the gateway accepts', async () => {
    const before = Date.now();
    const { login, approval, shown } = await loginWithUser({ issuer: issuer.issuer, clientId: issuer.clientId }, { member: 'alice' });
    expect(approval).toBe('approved');
    expect(shown.verificationUri).toBe(`${issuer.issuer}/device`);
    expect(shown.verificationUriComplete).toBe(`${issuer.issuer}/device?user_code=${encodeURIComponent(shown.userCode)}`);
    expect(shown.expiresIn).toBeGreaterThan(0);
    if (login.status !== 'fulfilled') throw login.reason;
    const tokens = login.value;
    expect(tokens.accessToken.split('.')).toHaveLength(3);
    const header = JSON.parse(Buffer.from(tokens.accessToken.split('.')[0], 'base64url').toString('utf8')) as { kid: string };
    expect(header).toMatchObject({ typ: 'at+jwt', alg: 'ES256', kid: expect.any(String) });
    const published = (await (await fetch(issuer.jwksUri)).json()) as { keys: { kid: string }[] };
    expect(published.keys.map((key) => key.kid)).toContain(header.kid);
    expect(tokens.scopes.sort()).toEqual(['interns', 'vault:read']);
    expect(typeof tokens.refreshToken).toBe('string');
    const expiresInMs = Date.parse(tokens.expiresAt) - before;
    expect(expiresInMs).toBeGreaterThan(590_000);
    expect(expiresInMs).toBeLessThanOrEqual(630_000);

    const listed = await platform.api(`${API}/interns`, { token: tokens.accessToken });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ data: [], has_more: false });

    // The token acts as alice in her workspace: what it creates is hers when she lists it with her API key.
    const created = await platform.api(`${API}/interns`, { token: tokens.accessToken, json: { name: 'device-flow', provision: false } });
    expect(created.status).toBe(201);
    const mine = await platform.api(`${API}/interns`, { token: ALICE_KEY });
    expect(mine.body.data).toEqual([expect.objectContaining({ id: created.body.id, workspace_id: WORKSPACE, created_by_you: true })]);
  }, 30_000);

  it('passes an explicit resource and scope; a token without `interns` is 403 insufficient_scope', async () => {
    const { login, approval } = await loginWithUser(
      { issuer: issuer.issuer, clientId: issuer.clientId, resource: issuer.resource, scope: 'vault:read' },
      { member: 'alice' },
    );
    expect(approval).toBe('approved');
    if (login.status !== 'fulfilled') throw login.reason;
    expect(login.value.scopes).toEqual(['vault:read']);
    const listed = await platform.api(`${API}/interns`, { token: login.value.accessToken });
    expect(listed.status).toBe(403);
    expect(listed.body.error.metadata.reason).toBe('insufficient_scope');
  }, 30_000);

  it('answers access_denied when the user refuses', async () => {
    const { login, approval } = await loginWithUser({ issuer: issuer.issuer, clientId: issuer.clientId }, { member: 'alice', decision: 'deny' });
    expect(approval).toBe('denied');
    const error = failureOf(login);
    expect(error.reason).toBe('access_denied');
    expect(error.message).toMatch(/^the login was denied at the issuer/);
  }, 30_000);

  it('answers timeout when nobody approves within the wait, and aborted when the caller cancels', async () => {
    const started = Date.now();
    const waited = deviceFlowLogin({ issuer: issuer.issuer, clientId: issuer.clientId, timeoutMs: 1500, onUserCode: () => undefined });
    const timedOut = failureOf((await Promise.allSettled([waited]))[0]);
    expect(timedOut.reason).toBe('timeout');
    expect(timedOut.message).toBe('the login was not approved within 2 s; run login again');
    expect(Date.now() - started).toBeLessThan(5000);

    const controller = new AbortController();
    const cancelled = deviceFlowLogin({ issuer: issuer.issuer, clientId: issuer.clientId, signal: controller.signal, onUserCode: () => controller.abort() });
    const aborted = failureOf((await Promise.allSettled([cancelled]))[0]);
    expect(aborted.reason).toBe('aborted');
  }, 30_000);

  it('answers expired_token when the issuer lets the code expire', async () => {
    const shortLived = await OidcProviderServer.start({ accounts: [], deviceCodeTtlSeconds: 2 });
    try {
      const shown: DeviceUserCode[] = [];
      const expired = deviceFlowLogin({ issuer: shortLived.issuer, clientId: shortLived.clientId, onUserCode: (code) => void shown.push(code) });
      const error = failureOf((await Promise.allSettled([expired]))[0]);
      expect(shown.map((code) => code.expiresIn)).toEqual([2]);
      expect(error.reason).toBe('expired_token');
      expect(error.message).toBe('the code expired before the login was approved; run login again');
    } finally {
      await shortLived.stop();
    }
  }, 30_000);

  it('refuses an opaque access token, which the platform could not verify, with a message that says so', async () => {
    const opaque = await OidcProviderServer.start({ accounts: [{ member: 'alice', organizationId: 'acme', workspaceId: WORKSPACE }], accessTokenFormat: 'opaque' });
    try {
      const { login, approval } = await loginWithUser({ issuer: opaque.issuer, clientId: opaque.clientId }, { member: 'alice' });
      expect(approval).toBe('approved');
      const error = failureOf(login);
      expect(error.reason).toBe('unusable_token');
      expect(error.message).toMatch(/not a JWT/);
    } finally {
      await opaque.stop();
    }
  }, 30_000);

  it('says clearly when the issuer does not offer the device flow', async () => {
    const codeFlowOnly = await OidcProviderServer.start({ accounts: [], deviceFlow: false });
    try {
      expect(await supportsDeviceFlow(codeFlowOnly.issuer)).toBe(false);
      expect(await supportsDeviceFlow(issuer.issuer)).toBe(true);
      const shown: DeviceUserCode[] = [];
      const login = deviceFlowLogin({ issuer: codeFlowOnly.issuer, clientId: codeFlowOnly.clientId, onUserCode: (code) => void shown.push(code) });
      const error = failureOf((await Promise.allSettled([login]))[0]);
      expect(error.reason).toBe('device_flow_unsupported');
      expect(error.message).toBe(`the issuer ${codeFlowOnly.issuer} does not offer the device flow (its discovery document has no device_authorization_endpoint)`);
      expect(shown).toEqual([]);
    } finally {
      await codeFlowOnly.stop();
    }
  }, 30_000);

  it('says which issuer could not be read when discovery fails', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const probe = supportsDeviceFlow(nobody, { requestTimeoutMs: 2000 });
    const error = failureOf((await Promise.allSettled([probe]))[0]);
    expect(error.reason).toBe('discovery_failed');
    // The cause chain is in the message (under jest openid-client also prefixes its generic "something went wrong").
    expect(error.message).toMatch(new RegExp(`^could not read the discovery document of ${nobody}: .*fetch failed: connect ECONNREFUSED`));
  }, 30_000);
});

describe('interns login --issuer', () => {
  it('shows the code on stderr, and once the user approves stores the token (0600) and uses it', async () => {
    const home = await CliHome.create();
    try {
      const apiUrl = `${platform.gatewayUrl}${API}`;
      const child = spawn(process.execPath, [CLI_ENTRY, 'login', '--issuer', issuer.issuer, '--client-id', issuer.clientId, '--api', apiUrl, '--json'], {
        env: home.env(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      const deadline = Date.now() + 20_000;
      let shown: RegExpExecArray | null = null;
      while ((shown = /Open (\S+) and enter the code (\S+) /.exec(stderr)) === null) {
        if (Date.now() > deadline) throw new Error(`no code shown: ${stderr}`);
        await new Promise((done) => setTimeout(done, 50));
      }
      expect(await approveDeviceLogin({ verificationUri: shown[1], userCode: shown[2], member: 'alice' })).toBe('approved');
      expect(await exited).toBe(0);
      expect(JSON.parse(stdout)).toEqual({ api: apiUrl, kind: 'oauth_token', credentials_file: home.credentialsPath });
      expect((await stat(home.credentialsPath)).mode & 0o777).toBe(0o600);
      const listed = await home.json<{ data: unknown[] }>(['ls', '--api', apiUrl]);
      expect(Array.isArray(listed.data)).toBe(true);
    } finally {
      await home.remove();
    }
  }, 60_000);
});
