import 'reflect-metadata';
import type { Subscription } from '@nats-io/transport-node';
import { type RpcRequestPacket, subjectsFor } from '@interns/contracts';
import { IdentityStore } from '@interns/identity';
import { GatewayHarness, startGatewayHarness } from '../testing/gateway.harness';
import { identityFile, KEYS } from '../testing/harness-identities.fixture';

const QUERIES_PER_MINUTE = 3;
const OTHER_ORGANIZATION_KEY = 'gw-spec-other-management-key';
const QUERY = { metrics: ['run_count'] };

/** CONTRACT section 22: ANALYTICS_QUERIES_PER_MINUTE per organization, then 429 in the analytics error shape. */
describe('gateway: analytics queries per organization', () => {
  let harness: GatewayHarness;
  let analytics: Subscription;
  const answered: string[] = [];

  beforeAll(async () => {
    harness = await startGatewayHarness({
      name: 'analytics-limit-spec',
      routeDeadlineMs: 5000,
      env: { ANALYTICS_QUERIES_PER_MINUTE: String(QUERIES_PER_MINUTE) },
    });
    const identities = identityFile();
    await new IdentityStore(harness.gateway.deps.dataSource).apply({
      ...identities,
      organizations: [...identities.organizations, { id: 'org-other', name: 'Other', programme: true, lifecycle_writes: true }],
      api_keys: [...identities.api_keys, { key: OTHER_ORGANIZATION_KEY, kind: 'management', organization_id: 'org-other' }],
    });
    // The analytics service as a plain responder: it records whose query reached it.
    const subject = subjectsFor(harness.gateway.deps.config.natsPrefix).analytics.query;
    analytics = harness.nc.subscribe(subject, {
      callback: (_error, msg) => {
        const packet = msg.json<RpcRequestPacket<{ organizationId: string }>>();
        answered.push(packet.data.organizationId);
        msg.respond(JSON.stringify({ id: packet.id, response: { data: { data: [] } }, isDisposed: true }));
      },
    });
    await harness.nc.flush();
  });

  afterAll(async () => {
    analytics?.unsubscribe();
    await harness?.stop();
  });

  const query = (key: string, body: unknown = QUERY) =>
    fetch(`http://127.0.0.1:${harness.gateway.port}/api/v1/analytics/query`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it(`answers ${QUERIES_PER_MINUTE} queries a minute, then 429 with Retry-After and no metadata; other organizations go on`, async () => {
    // A refused body costs the analytics service nothing and is not counted.
    expect((await query(KEYS.management, { metrics: ['nope'] })).status).toBe(400);
    const statuses: number[] = [];
    for (let i = 0; i < QUERIES_PER_MINUTE; i += 1) statuses.push((await query(KEYS.management)).status);
    expect(statuses).toEqual([200, 200, 200]);

    const limited = await query(KEYS.management);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await limited.json()).toEqual({
      error: { code: 429, message: `this organization's analytics queries are limited to ${QUERIES_PER_MINUTE} a minute (ANALYTICS_QUERIES_PER_MINUTE)` },
    });

    expect((await query(OTHER_ORGANIZATION_KEY)).status).toBe(200);
    expect(answered.filter((organization) => organization === 'org-main')).toHaveLength(QUERIES_PER_MINUTE);
  });
});
