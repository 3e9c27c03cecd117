/**
 * The webhooks service's endpoint subjects, served in process (its real module, PostgreSQL and NATS) with a
 * test resolver in place of DNS: URLs whose names resolve to private addresses are refused at creation,
 * the per-workspace cap holds, and every route sees only the caller's workspace.
 */
import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { type CreatedWebhookEndpoint, type Principal, type RequestContext, subjectsFor, type Subjects } from '@interns/contracts';
import { RemoteServiceError, RpcClient } from '@interns/messaging';
import { bootstrapService, type RunningService } from '@interns/service-runtime';
import { createTestDatabase, deleteTestStreams, type TestDatabase, testNatsPrefix } from '@interns/testing';
import type { HostResolver } from '../address-guard/address-guard';
import { WEBHOOKS_MIGRATIONS } from '../migrations';
import { WORKSPACE } from '../testing/webhooks.fixture';
import { EndpointSecrets } from '../secrets/endpoint-secrets';
import { EndpointStore } from './endpoint-store';
import { WebhooksModule } from '../webhooks.module';

const OTHER_WORKSPACE = '22222222-2222-4222-8222-222222222222';
const LIMIT = 3;
const SECRETS_KEY = randomBytes(32).toString('base64');

/** Test DNS: public and private names, nothing else. */
const resolver: HostResolver = async (hostname) => {
  const names: Record<string, string[]> = {
    'hooks.example.com': ['93.184.216.34'],
    'internal.example.com': ['10.0.0.1'],
    'sneaky.example.com': ['93.184.216.34', '169.254.169.254'],
  };
  const found = names[hostname];
  if (found === undefined) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  return found;
};

function contextIn(workspaceId: string): RequestContext {
  const principal: Principal = {
    kind: 'user',
    organizationId: 'acme',
    workspaceId,
    memberId: 'alice',
    keyId: 'key-1',
    internId: null,
    scopes: [],
    chatappInstallRequired: false,
  };
  return { correlationId: randomUUID(), principal };
}

describe('webhook endpoints over NATS', () => {
  const prefix = testNatsPrefix();
  let db: TestDatabase;
  let running: RunningService;
  let nc: NatsConnection;
  let rpc: RpcClient;
  let subjects: Subjects['webhooks'];

  beforeAll(async () => {
    db = await createTestDatabase();
    running = await bootstrapService({
      service: 'webhooks',
      schema: 'webhooks',
      migrations: WEBHOOKS_MIGRATIONS,
      rootModule: (deps) => WebhooksModule.forRoot(deps, resolver),
      port: (config) => config.webhooksPort,
      env: {
        DATABASE_URL: db.url,
        NATS_PREFIX: prefix,
        WEBHOOKS_PORT: '0',
        WEBHOOK_ENDPOINTS_PER_WORKSPACE: String(LIMIT),
        WEBHOOK_SECRETS_KEY: SECRETS_KEY,
      },
      handleSignals: false,
      logger: false,
    });
    nc = await connect({ servers: running.deps.config.natsUrl });
    rpc = new RpcClient(nc);
    subjects = subjectsFor(prefix).webhooks;
  });

  afterAll(async () => {
    await running?.close();
    await nc?.close();
    await deleteTestStreams(prefix).catch(() => undefined);
    await db?.drop();
  });

  afterEach(async () => {
    await running.deps.dataSource.query('DELETE FROM webhooks.endpoints');
  });

  const create = (url: string, workspaceId = WORKSPACE, events = ['run.completed']) =>
    rpc.request<CreatedWebhookEndpoint>(subjects.createEndpoint, { context: contextIn(workspaceId), body: { url, events } }, { timeoutMs: 5000 });

  async function refusal(promise: Promise<unknown>): Promise<{ reason: string; message: string }> {
    const error = await promise.then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(RemoteServiceError);
    return (error as RemoteServiceError).payload;
  }

  it('creates an endpoint on a public https URL and answers its secret once', async () => {
    const created = await create('https://hooks.example.com/in');
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      url: 'https://hooks.example.com/in',
      events: ['run.completed'],
      description: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      created_at: expect.stringMatching(/Z$/),
    });
    const listed = await rpc.request<{ data: unknown[] }>(subjects.listEndpoints, { context: contextIn(WORKSPACE) }, { timeoutMs: 5000 });
    expect(listed.data).toEqual([{ id: created.id, url: created.url, events: created.events, description: null, created_at: created.created_at }]);
  });

  it('stores the secret sealed: neither its row nor a pg_dump of the database holds it', async () => {
    const created = await create('https://hooks.example.com/in');
    const [row]: { secret: string }[] = await running.deps.dataSource.query('SELECT secret FROM webhooks.endpoints WHERE id = $1', [created.id]);
    expect(row?.secret).toMatch(/^v1\.[0-9a-f]{8}\./);
    expect(row?.secret).not.toContain(created.secret.slice('whsec_'.length, 20));
    const { stdout } = await promisify(execFile)('pg_dump', ['--data-only', '--schema=webhooks', db.url], { maxBuffer: 64 * 1024 * 1024 });
    expect(stdout).toContain(created.id);
    expect(stdout).not.toContain(created.secret);
    expect(stdout).not.toContain(created.secret.slice('whsec_'.length));
    // The service opens it again for signing.
    const secrets = await EndpointSecrets.load({ key: SECRETS_KEY, previousKey: null, keysDir: '/nonexistent' });
    expect(secrets.open(row?.secret ?? '', created.id)).toBe(created.secret);
    expect(() => secrets.open(row?.secret ?? '', randomUUID())).toThrow();
  });

  it('seals again at start what an older release stored in the clear and what the previous key sealed', async () => {
    const store = new EndpointStore(running.deps.dataSource);
    const oldKey = randomBytes(32).toString('base64');
    const old = await EndpointSecrets.load({ key: oldKey, previousKey: null, keysDir: '/nonexistent' });
    const clearId = randomUUID();
    const rotatedId = randomUUID();
    const insert = (id: string, secret: string) =>
      running.deps.dataSource.query(
        'INSERT INTO webhooks.endpoints (id, workspace_id, url, events, secret) VALUES ($1, $2, $3, $4, $5)',
        [id, WORKSPACE, 'https://hooks.example.com/in', ['run.completed'], secret],
      );
    const strangerId = randomUUID();
    const stranger = await EndpointSecrets.load({ key: randomBytes(32).toString('base64'), previousKey: null, keysDir: '/nonexistent' });
    await insert(clearId, 'whsec_stored-in-the-clear');
    await insert(rotatedId, old.seal('whsec_sealed-by-the-old-key', rotatedId));
    await insert(strangerId, stranger.seal('whsec_sealed-by-a-key-nobody-here-holds', strangerId));

    const rotating = await EndpointSecrets.load({ key: SECRETS_KEY, previousKey: oldKey, keysDir: '/nonexistent' });
    // What no key of this process opens is left as it is and named, not a reason to refuse to start.
    expect(await store.resealSecrets(rotating)).toEqual({ resealed: 2, unreadable: [strangerId] });
    expect(await store.resealSecrets(rotating)).toEqual({ resealed: 0, unreadable: [strangerId] });

    const current = await EndpointSecrets.load({ key: SECRETS_KEY, previousKey: null, keysDir: '/nonexistent' });
    const rows: { id: string; secret: string }[] = await running.deps.dataSource.query('SELECT id, secret FROM webhooks.endpoints WHERE id <> $1', [strangerId]);
    const opened = Object.fromEntries(rows.map((row) => [row.id, current.open(row.secret, row.id)]));
    expect(opened).toEqual({ [clearId]: 'whsec_stored-in-the-clear', [rotatedId]: 'whsec_sealed-by-the-old-key' });
  });

  it.each([
    ['a name that resolves to 10.0.0.1', 'https://internal.example.com/hook', /private address, which webhooks may not call/],
    ['a name with one metadata address among public ones', 'https://sneaky.example.com/hook', /metadata address/],
    ['loopback', 'https://127.0.0.1/hook', /loopback/],
    ['the metadata service', 'https://169.254.169.254/latest/meta-data', /metadata/],
    ['plain http', 'http://hooks.example.com/hook', /must use https/],
    ['a name that does not resolve', 'https://nowhere.example.com/hook', /does not resolve/],
  ])('refuses %s with invalid_body', async (_what, url, why) => {
    const payload = await refusal(create(url));
    expect(payload.reason).toBe('invalid_body');
    expect(payload.message).toMatch(why);
  });

  it(`caps a workspace at WEBHOOK_ENDPOINTS_PER_WORKSPACE (${LIMIT}) endpoints, even under concurrent creates`, async () => {
    const results = await Promise.allSettled(Array.from({ length: LIMIT + 3 }, () => create('https://hooks.example.com/in')));
    expect(results.filter((result) => result.status === 'fulfilled')).toHaveLength(LIMIT);
    const payload = await refusal(create('https://hooks.example.com/in'));
    expect(payload).toMatchObject({ reason: 'invalid_body', message: `a workspace may have at most ${LIMIT} webhook endpoints` });
    // Another workspace has its own count.
    await expect(create('https://hooks.example.com/in', OTHER_WORKSPACE)).resolves.toMatchObject({ url: 'https://hooks.example.com/in' });
  });

  it("treats another workspace's endpoint as not found", async () => {
    const created = await create('https://hooks.example.com/in');
    const foreign = { context: contextIn(OTHER_WORKSPACE), endpointId: created.id };
    expect(await refusal(rpc.request(subjects.deleteEndpoint, foreign, { timeoutMs: 5000 }))).toMatchObject({ reason: 'not_found' });
    expect(await refusal(rpc.request(subjects.listDeliveries, foreign, { timeoutMs: 5000 }))).toMatchObject({ reason: 'not_found' });
    const listed = await rpc.request<{ data: unknown[] }>(subjects.listEndpoints, { context: contextIn(OTHER_WORKSPACE) }, { timeoutMs: 5000 });
    expect(listed.data).toEqual([]);

    const own = { context: contextIn(WORKSPACE), endpointId: created.id };
    await expect(rpc.request(subjects.listDeliveries, own, { timeoutMs: 5000 })).resolves.toEqual({ data: [] });
    await expect(rpc.request(subjects.deleteEndpoint, own, { timeoutMs: 5000 })).resolves.toEqual({ deleted: true });
    expect(await refusal(rpc.request(subjects.deleteEndpoint, own, { timeoutMs: 5000 }))).toMatchObject({ reason: 'not_found' });
  });
});
