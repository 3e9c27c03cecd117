import 'reflect-metadata';
import { request as httpRequest } from 'node:http';
import { GatewayHarness, startGatewayHarness } from '../testing/gateway.harness';
import { bearer, KEYS } from '../testing/harness-identities.fixture';

interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: string;
}

/** GET /api/v1/interns from a chosen loopback address (Linux routes all of 127.0.0.0/8 to lo). */
function list(port: number, authorization: string, localAddress = '127.0.0.1'): Promise<Answer> {
  return get(port, '/api/v1/interns', authorization, localAddress);
}

function get(port: number, path: string, authorization: string | undefined, localAddress: string): Promise<Answer> {
  const headers: Record<string, string> = { connection: 'close' };
  if (authorization !== undefined) headers.authorization = authorization;
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path, localAddress, headers },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** CONTRACT section 16: 401s per client address, AUTH_FAILURES_PER_MINUTE (120) a minute, then 429. */
describe('gateway: authentication failures per client address', () => {
  let harness: GatewayHarness;
  let port: number;

  beforeAll(async () => {
    harness = await startGatewayHarness({ name: 'auth-failure-spec', routeDeadlineMs: 5000 });
    port = harness.gateway.port;
    harness.standIn.answer(() => ({ response: { data: [], has_more: false } }));
  });

  afterAll(async () => {
    await harness?.stop();
  });

  it('answers 429 with Retry-After after the 120th 401, to good keys as well, and only for that address', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 130; i += 1) statuses.push((await list(port, `Bearer bad-key-${i}`)).status);
    expect(statuses.slice(0, 120)).toEqual(Array(120).fill(401));
    expect(statuses.slice(120)).toEqual(Array(10).fill(429));

    const good = await list(port, bearer(KEYS.user).authorization);
    expect(good.status).toBe(429);
    expect(JSON.parse(good.body)).toMatchObject({ error: { code: 429, metadata: { reason: 'rate_limited' } } });
    const retryAfter = Number(good.retryAfter);
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);

    expect((await list(port, bearer(KEYS.user).authorization, '127.0.0.2')).status).toBe(200);
    expect((await list(port, 'Bearer bad-key', '127.0.0.2')).status).toBe(401);
  });

  it('counts the analytics routes\' 401s too, and answers them 429 in the analytics shape', async () => {
    const from = '127.0.0.3';
    const statuses: number[] = [];
    for (let i = 0; i < 125; i += 1) {
      const authorization = i % 2 === 0 ? `Bearer bad-management-key-${i}` : undefined;
      statuses.push((await get(port, '/api/v1/analytics/meta', authorization, from)).status);
    }
    expect(statuses.slice(0, 120)).toEqual(Array(120).fill(401));
    expect(statuses.slice(120)).toEqual(Array(5).fill(429));

    const limited = await get(port, '/api/v1/analytics/meta', 'Bearer bad-again', from);
    expect(limited.status).toBe(429);
    expect(JSON.parse(limited.body)).toEqual({ error: { code: 429, message: 'too many authentication failures from this address' } });
    expect(Number(limited.retryAfter)).toBeGreaterThanOrEqual(1);
    // The intern routes hear of the same address's block.
    expect((await list(port, bearer(KEYS.user).authorization, from)).status).toBe(429);
  });
});
