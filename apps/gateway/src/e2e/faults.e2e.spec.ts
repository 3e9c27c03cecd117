/**
 * End to end: the gateway under service and broker faults. Runs on a private nats-server so the broker
 * outage never touches other tests.
 */
import { NatsServerProcess, Platform, PLATFORM_SERVICES, startNatsServer, waitForHttp } from '@interns/testing';
import { IDENTITIES, KEYS } from '@interns/testing/e2e';

const API = '/api/v1';
const DEADLINE_MS = 1500;
let nats: NatsServerProcess;
let platform: Platform;

const listInterns = () => platform.api(`${API}/interns`, { token: KEYS.alice });

async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T = await probe();
  while (!accept(last)) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
    last = await probe();
  }
  return last;
}

beforeAll(async () => {
  nats = await startNatsServer({ jetstream: true });
  platform = await Platform.start({ env: { NATS_URL: nats.url, LIFECYCLE_ROUTE_DEADLINE_MS: String(DEADLINE_MS) } });
  await platform.applyIdentities(IDENTITIES);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
  await nats?.remove();
});

it('answers 500 internal_error at once while lifecycle is down, and recovers when it is back', async () => {
  expect((await listInterns()).status).toBe(200);
  await platform.stopService('lifecycle');

  const started = Date.now();
  const down = await listInterns();
  expect(Date.now() - started).toBeLessThan(1000);
  expect(down.status).toBe(500);
  expect(down.body).toEqual({
    error: { code: 500, message: expect.any(String), metadata: { reason: 'internal_error', retryable: true } },
  });
  expect(down.headers.get('retry-after')).toMatch(/^\d+$/);

  await platform.startService('lifecycle');
  expect((await listInterns()).status).toBe(200);
}, 60_000);

it('answers 408 within the route deadline while lifecycle is frozen, and recovers on SIGCONT', async () => {
  const lifecycle = platform.process('lifecycle');
  process.kill(lifecycle.pid, 'SIGSTOP');
  try {
    const started = Date.now();
    const frozen = await listInterns();
    const elapsed = Date.now() - started;
    expect(frozen.status).toBe(408);
    expect(frozen.body).toEqual({
      error: { code: 408, message: 'route deadline of 1.5s exceeded', metadata: { reason: 'timeout', retryable: true } },
    });
    expect(elapsed).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    expect(elapsed).toBeLessThan(DEADLINE_MS + 1000);
  } finally {
    process.kill(lifecycle.pid, 'SIGCONT');
  }
  expect((await eventually(listInterns, (r) => r.status === 200, 10_000)).status).toBe(200);
}, 60_000);

it('recovers every service on its own after the broker is gone for 30 s', async () => {
  const port = nats.port;
  await nats.stop('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 30_000));
  // While the broker is away, the gateway still answers at once, in the envelope.
  const during = await listInterns();
  expect(during.status).toBe(500);
  nats = await startNatsServer({ port, jetstream: true });

  for (const service of PLATFORM_SERVICES) {
    await waitForHttp(`${platform.process(service).url}/health/ready`, { timeoutMs: 20_000 });
  }
  const created = await eventually(
    () => platform.api(`${API}/interns`, { token: KEYS.alice, json: { name: `after-outage-${Date.now()}` } }),
    (r) => r.status === 201,
    20_000,
  );
  expect(created.status).toBe(201);
  expect((await listInterns()).status).toBe(200);
}, 120_000);
