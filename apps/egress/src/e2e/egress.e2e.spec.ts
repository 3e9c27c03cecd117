/**
 * End to end: egress (interface section 19) through the real gateway, lifecycle, runs, its bubblewrap sandbox and the
 * egress service's proxy, with real TLS. Origins are local HTTPS and HTTP servers under a test CA of their own (what
 * public servers are to the proxy), reached by name through EGRESS_RESOLVE and EGRESS_ALLOW_PRIVATE; the egress
 * process trusts their CA through NODE_EXTRA_CA_CERTS, as it trusts public CAs by default. Every command is what an
 * intern's owner would type into chat as `/shell ...`.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { newOriginCa, type Origin, Platform, PLATFORM_SERVICES, startHttpOrigin, startHttpsOrigin } from '@interns/testing';
import {
  API,
  attachTerminal,
  createRunningIntern,
  doorOf,
  IDENTITIES,
  KEYS,
  oauthToken,
  prompt,
  readStream,
} from '@interns/testing/e2e';

const SECRET_VALUE = 'ghp_e2e-egress-secret-value-7f3a';
const BOUND = 'api.bound.test';
const ALLOWED = 'allowed.test';
const WILDCARD_HOST = 'deep.sub.wild.test';
const PLAIN = 'plain.allowed.test';
const REFUSED = 'refused.test';
const PLATFORM_NAME = 'platform.test';
/** PostgreSQL's port on this machine: the platform's own, refused even with EGRESS_ALLOW_PRIVATE. */
const POSTGRES_PORT = 5432;

let platform: Platform;
let scratch: string;
let bound: Origin;
let other: Origin;
let plain: Origin;
let internId: string;
let originCaPem: string;

async function shell(command: string): Promise<string> {
  const summary = await readStream(await prompt(platform, internId, `/shell ${command}`), 40_000);
  expect(summary.finishReason).toBe('stop');
  return summary.content;
}

/** curl as an intern would type it: through the proxy its environment names, trusting the bundle it names. */
const curl = (args: string) => `curl -sS --max-time 15 ${args} 2>&1; echo " exit=$?"`;

const put = (path: string, json: unknown) => platform.api(`${API}${path}`, { method: 'PUT', token: KEYS.alice, json });

beforeAll(async () => {
  const ca = await newOriginCa();
  originCaPem = ca.certificatePem;
  [bound, other, plain] = await Promise.all([startHttpsOrigin(ca, [BOUND]), startHttpsOrigin(ca, [ALLOWED, WILDCARD_HOST, REFUSED]), startHttpOrigin()]);
  scratch = await mkdtemp(join(tmpdir(), 'egress-e2e-'));
  const originCa = join(scratch, 'origin-ca.pem');
  await writeFile(originCa, ca.certificatePem);
  const names = [BOUND, ALLOWED, WILDCARD_HOST, PLAIN, REFUSED, PLATFORM_NAME];
  platform = await Platform.start({
    env: {
      CHAT_TURNS_PER_MINUTE: '1000',
      EGRESS_ALLOW_PRIVATE: 'true',
      EGRESS_RESOLVE: names.map((name) => `${name}:127.0.0.1`).join(','),
      EGRESS_PORTS: [bound.port, other.port, plain.port, POSTGRES_PORT].join(','),
      NODE_EXTRA_CA_CERTS: originCa,
    },
  });
  await platform.applyIdentities(IDENTITIES);
  internId = await createRunningIntern(platform, KEYS.alice, 60_000);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
  await Promise.all([bound, other, plain].filter(Boolean).map((origin) => origin.close()));
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('with the default policy (nothing allowed, no secret)', () => {
  it('refuses every host with a readable 403, and the origin sees nothing', async () => {
    const answer = await shell(curl(`https://${ALLOWED}:${other.port}/hello`));
    expect(answer).toMatch(/CONNECT tunnel failed, response 403/);
    expect(answer).not.toContain('exit=0');
    expect(other.requests).toEqual([]);
  });

  it('leaves no other way out: no DNS, no raw TCP, no route', async () => {
    expect(await shell(`getent hosts ${ALLOWED} || echo no-dns`)).toBe('no-dns\n');
    const devTcp = await shell(`bash -c 'echo hi > /dev/tcp/8.8.8.8/53' 2>&1; echo "exit=$?"`);
    expect(devTcp).toMatch(/Network is unreachable/);
    expect(devTcp).toMatch(/exit=1\n$/);
    const tcp = await shell(`python3 -c "import socket; socket.create_connection(('8.8.8.8', 443), timeout=3)" 2>&1 | tail -1`);
    expect(tcp).toMatch(/Network is unreachable|No route to host/);
    const local = await shell(`python3 -c "import socket; socket.create_connection(('127.0.0.1', ${other.port}), timeout=3)" 2>&1 | tail -1`);
    expect(local).toMatch(/Connection refused/);
    expect(other.requests).toEqual([]);
  });
});

describe('the allow list', () => {
  it('lets an exact host and a *.domain subdomain through, tunnelled untouched; everything else stays refused', async () => {
    expect((await put(`/interns/${internId}/egress`, { allow: [ALLOWED, '*.wild.test'] })).status).toBe(200);
    // Tunnelled means the origin's own certificate reaches curl: trusting the origins' CA alone, it verifies it (a
    // leaf of the egress CA would fail), while the sandbox's bundle, which lacks that test CA, does not.
    const lines = originCaPem.trim().split('\n').map((line) => `'${line}'`).join(' ');
    await shell(`printf '%s\\n' ${lines} > origin-ca.pem`);
    expect(await shell(curl(`https://${ALLOWED}:${other.port}/untrusted`))).toContain('exit=60');
    expect(await shell(curl(`--cacert origin-ca.pem https://${ALLOWED}:${other.port}/hello`))).toBe('{"ok":true} exit=0\n');
    expect(await shell(curl(`--cacert origin-ca.pem https://${WILDCARD_HOST}:${other.port}/deep`))).toBe('{"ok":true} exit=0\n');
    const refused = await shell(curl(`https://${REFUSED}:${other.port}/nope`));
    expect(refused).toMatch(/CONNECT tunnel failed, response 403/);
    expect(other.requests.map((request) => request.url)).toEqual(['/hello', '/deep']);
    expect(other.requests.every((request) => request.headers['x-forwarded-for'] === undefined)).toBe(true);
  });

  it("refuses the platform's own addresses even with EGRESS_ALLOW_PRIVATE", async () => {
    expect((await put(`/interns/${internId}/egress`, { allow: [ALLOWED, '*.wild.test', PLATFORM_NAME] })).status).toBe(200);
    const answer = await shell(`curl -sS --max-time 15 http://${PLATFORM_NAME}:${POSTGRES_PORT}/ 2>&1`);
    expect(answer).toContain('egress_denied');
    expect(answer).toContain('platform itself');
  });
});

describe('a secret bound to a host', () => {
  beforeAll(async () => {
    const written = await put(`/vault/interns/${internId}/secrets/api_token`, { value: SECRET_VALUE, hosts: [BOUND] });
    expect(written.status).toBe(200);
    expect((await put(`/interns/${internId}/egress`, { allow: [ALLOWED, PLAIN] })).status).toBe(200);
  });

  it('is a placeholder in the sandbox, the same in every command', async () => {
    const first = await shell('echo "$API_TOKEN"');
    expect(first).toMatch(/^vault:api_token:[0-9a-f]{32}\n$/);
    expect(await shell('printenv API_TOKEN')).toBe(first);
    expect(await shell('env | grep -c ghp_ || true')).toBe('0\n');
  });

  it('arrives as its value at the bound host (TLS terminated under the egress CA), and only there', async () => {
    const answer = await shell(curl(`-H "Authorization: Bearer $API_TOKEN" https://${BOUND}:${bound.port}/repos`));
    expect(answer).toBe('{"ok":true} exit=0\n');
    const received = bound.requests.at(-1);
    expect(received?.headers.authorization).toBe(`Bearer ${SECRET_VALUE}`);
    expect(answer).not.toContain(SECRET_VALUE);
  });

  it('is refused on its way to another host the proxy sees, and that host gets nothing', async () => {
    const before = plain.requests.length;
    const answer = await shell(`curl -sS --max-time 15 -H "Authorization: Bearer $API_TOKEN" http://${PLAIN}:${plain.port}/leak 2>&1`);
    expect(answer).toContain(`egress_denied: secret api_token is not released to ${PLAIN}`);
    expect(plain.requests.length).toBe(before);
  });

  it("means, by name, the intern's own secret first, else the workspace's", async () => {
    expect((await put('/vault/secrets/shared_token', { value: 'workspace-value-1', hosts: [BOUND] })).status).toBe(200);
    const send = () => shell(curl(`-H "X-Token: $SHARED_TOKEN" https://${BOUND}:${bound.port}/shared`));
    expect(await send()).toBe('{"ok":true} exit=0\n');
    expect(bound.requests.at(-1)?.headers['x-token']).toBe('workspace-value-1');
    expect((await put(`/vault/interns/${internId}/secrets/shared_token`, { value: 'intern-value-2', hosts: [BOUND] })).status).toBe(200);
    expect(await send()).toBe('{"ok":true} exit=0\n');
    expect(bound.requests.at(-1)?.headers['x-token']).toBe('intern-value-2');
  });

  it("never reaches the database (transcripts, run chunks, the egress log), nor any service's log", async () => {
    const { stdout } = await promisify(execFile)('pg_dump', ['--data-only', platform.database.url], { maxBuffer: 256 * 1024 * 1024 });
    expect(stdout).toContain('vault:api_token:');
    expect(stdout).not.toContain(SECRET_VALUE);
    for (const service of PLATFORM_SERVICES) expect({ service, leaked: platform.process(service).output().includes(SECRET_VALUE) }).toEqual({ service, leaked: false });
  });
});

describe('the egress log', () => {
  interface Entry {
    host: string;
    port: number;
    method: string | null;
    path: string | null;
    decision: string;
    reason: string | null;
    secrets: string[];
    status: number | null;
    run_id: string | null;
    bytes_out: number;
    bytes_in: number;
  }

  it('holds every request the proxy handled, newest first: decision, reason, secrets by name, bytes', async () => {
    const answer = await platform.api(`${API}/interns/${internId}/egress/log?limit=500`, { token: KEYS.alice });
    expect(answer.status).toBe(200);
    const entries = (answer.body as { data: Entry[] }).data;
    const find = (predicate: (entry: Entry) => boolean) => entries.find(predicate);

    expect(find((entry) => entry.host === REFUSED)).toMatchObject({
      decision: 'denied',
      reason: `egress_denied: ${REFUSED} is not in this intern's egress policy`,
      method: null,
      secrets: [],
    });
    const tunnel = find((entry) => entry.host === ALLOWED && entry.decision === 'allowed' && entry.bytes_in > 0);
    expect(tunnel).toMatchObject({ port: other.port, method: null, path: null, status: null, secrets: [] });
    // Terminated for the bound host: the proxy saw the request, so method, path and status are there.
    expect(find((entry) => entry.host === BOUND && entry.path === '/repos')).toMatchObject({
      decision: 'allowed',
      method: 'GET',
      status: 200,
      secrets: ['api_token'],
    });
    expect(find((entry) => entry.host === PLAIN)).toMatchObject({
      decision: 'denied',
      reason: `egress_denied: secret api_token is not released to ${PLAIN}`,
      method: 'GET',
      path: '/leak',
      secrets: ['api_token'],
      bytes_out: 0,
    });
    expect(find((entry) => entry.host === PLATFORM_NAME)?.reason).toBe(`egress_denied: ${PLATFORM_NAME} resolves to an address of the platform itself`);
    // Each entry names the run whose command made the request.
    expect(entries.every((entry) => typeof entry.run_id === 'string')).toBe(true);
    expect(JSON.stringify(entries)).not.toContain(SECRET_VALUE);
  });
});

describe("a terminal at the intern's door", () => {
  it('has the same egress as the shell tool: the placeholder in its environment, the value only at the bound host', async () => {
    const door = await doorOf(platform, internId, await oauthToken(platform, 'interns vault:read'));
    const session = await attachTerminal(platform, door);
    try {
      const before = bound.requests.length;
      session.socket.send(Buffer.from(`echo "token=$API_TOKEN"; ${curl(`-H "Authorization: Bearer $API_TOKEN" https://${BOUND}:${bound.port}/from-terminal`)}\r`));
      await session.until(/exit=\d+/, 30_000);
      expect(session.text()).toMatch(/token=vault:api_token:[0-9a-f]{32}/);
      expect(session.text()).toContain('{"ok":true} exit=0');
      expect(session.text()).not.toContain(SECRET_VALUE);
      expect(bound.requests.slice(before).map((request) => [request.url, request.headers.authorization])).toEqual([['/from-terminal', `Bearer ${SECRET_VALUE}`]]);
      session.socket.send(Buffer.from(`${curl(`https://${REFUSED}:${other.port}/from-terminal`)}\r`));
      await session.until(/CONNECT tunnel failed, response 403[^]*exit=\d+/, 30_000);
    } finally {
      session.socket.close();
    }
    // The terminal's requests are in the egress log too, with no run (a terminal is not a run).
    const log = await platform.api(`${API}/interns/${internId}/egress/log?limit=500`, { token: KEYS.alice });
    const entry = (log.body as { data: { path: string | null; run_id: string | null; secrets: string[] }[] }).data.find((one) => one.path === '/from-terminal');
    expect(entry).toMatchObject({ run_id: null, secrets: ['api_token'] });
  }, 60_000);
});
