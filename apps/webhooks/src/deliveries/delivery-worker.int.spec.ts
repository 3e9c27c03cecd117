/**
 * The delivery worker against real PostgreSQL and a local receiver: Standard Webhooks headers (checked with an
 * independent HMAC), the retry schedule with one `webhook-id`, `failed` after it, timeouts, claims that lapse
 * when a replica dies mid-attempt, replicas sharing the table, and the address check at delivery time.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { DataSource } from 'typeorm';
import { openDatabase } from '@interns/database';
import { createTestDatabase, independentSignature, Receiver, type TestDatabase } from '@interns/testing';
import { WorkSignal } from '@interns/workers';
import { AddressGuard, type HostResolver } from '../address-guard/address-guard';
import { WEBHOOKS_MIGRATIONS } from '../migrations';
import type { EndpointSecrets } from '../secrets/endpoint-secrets';
import { deliveryRow, eventually, insertDelivery, insertEndpoint, testEndpointSecrets } from '../testing/webhooks.fixture';
import { DeliverySender } from './delivery-sender';
import { DeliveryStore } from './delivery-store';
import { DeliveryWorker } from './delivery-worker';

const quiet = { log: () => undefined, warn: () => undefined, error: () => undefined };
const localOnly: HostResolver = async (hostname) => (hostname === 'hooks.test' ? ['127.0.0.1'] : []);

describe('webhook delivery worker', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let receiver: Receiver;
  let secrets: EndpointSecrets;
  const workers: DeliveryWorker[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({ url: db.url, schema: 'webhooks', migrations: WEBHOOKS_MIGRATIONS, applicationName: 'delivery-worker.int.spec', migrate: true });
    secrets = await testEndpointSecrets();
  });

  beforeEach(async () => {
    receiver = await Receiver.start();
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((worker) => worker.onApplicationShutdown()));
    await receiver.stop();
    await dataSource.query('DELETE FROM webhooks.endpoints');
  });

  afterAll(async () => {
    await dataSource?.destroy();
    await db?.drop();
  });

  function startWorker(
    options: { schedule?: number[]; timeoutMs?: number; claimMs?: number; guard?: AddressGuard; signal?: WorkSignal; concurrency?: number } = {},
  ): DeliveryWorker {
    const timeoutMs = options.timeoutMs ?? 2_000;
    const worker = new DeliveryWorker({
      store: new DeliveryStore(dataSource, options.schedule ?? [100, 200], options.claimMs ?? 2 * timeoutMs + 1_000, secrets),
      sender: new DeliverySender(options.guard ?? new AddressGuard(localOnly, true), timeoutMs),
      concurrency: options.concurrency ?? 4,
      signal: options.signal,
      pollIntervalMs: 200,
      logger: quiet,
    });
    worker.onApplicationBootstrap();
    workers.push(worker);
    return worker;
  }

  const settled = (endpointId: string, eventId: string, timeoutMs = 10_000) =>
    eventually(() => deliveryRow(dataSource, endpointId, eventId), (row) => row?.status !== 'pending', timeoutMs);

  it('fails only the attempt whose secret this replica cannot open, and delivers the rest of the batch', async () => {
    const sealedElsewhere = await insertEndpoint(dataSource, { url: receiver.url, secrets: await testEndpointSecrets() });
    const readable = await insertEndpoint(dataSource, { url: receiver.url, secrets });
    const unsigned = await insertDelivery(dataSource, sealedElsewhere.id);
    const signed = await insertDelivery(dataSource, readable.id);
    startWorker({ schedule: [] });

    expect(await settled(readable.id, signed.eventId)).toMatchObject({ status: 'delivered' });
    expect(await settled(sealedElsewhere.id, unsigned.eventId)).toMatchObject({
      status: 'failed',
      last_error: expect.stringContaining('which this service does not hold'),
    });
    // Nothing was sent unsigned.
    expect(receiver.requests.map((request) => JSON.parse(request.body).id)).toEqual([signed.eventId]);
  });

  it('POSTs the payload with Standard Webhooks headers that verify with the secret, and records the delivery', async () => {
    const endpoint = await insertEndpoint(dataSource, { url: receiver.url, secrets });
    const { eventId, payload } = await insertDelivery(dataSource, endpoint.id);
    startWorker();

    const row = await settled(endpoint.id, eventId);
    expect(row).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 200, last_error: null });
    expect(row?.delivered_at).toBeInstanceOf(Date);
    const [request] = receiver.requests;
    expect(request.method).toBe('POST');
    expect(request.body).toBe(payload);
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['webhook-id']).toBe(eventId);
    const timestamp = request.headers['webhook-timestamp'] as string;
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(30);
    expect(request.headers['webhook-signature']).toBe(independentSignature(endpoint.secret, eventId, timestamp, request.body));
  });

  it('retries on the schedule with the same webhook-id until a 2xx', async () => {
    receiver.answer = () => (receiver.requests.length < 3 ? 500 : 204);
    const endpoint = await insertEndpoint(dataSource, { url: receiver.url, secrets });
    const { eventId } = await insertDelivery(dataSource, endpoint.id);
    startWorker({ schedule: [150, 300] });

    expect(await settled(endpoint.id, eventId)).toMatchObject({ status: 'delivered', attempts: 3, last_status_code: 204, last_error: null });
    const attempts = receiver.requestsWithId(eventId);
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((attempt) => attempt.body)).size).toBe(1);
    // The schedule's waits lie between the attempts.
    expect(attempts[1].at - attempts[0].at).toBeGreaterThanOrEqual(140);
    expect(attempts[2].at - attempts[1].at).toBeGreaterThanOrEqual(290);
    for (const attempt of attempts) {
      const timestamp = attempt.headers['webhook-timestamp'] as string;
      expect(attempt.headers['webhook-signature']).toBe(independentSignature(endpoint.secret, eventId, timestamp, attempt.body));
    }
  });

  it('fails the delivery after the last retry of the schedule', async () => {
    receiver.answer = () => 503;
    const endpoint = await insertEndpoint(dataSource, { url: receiver.url, secrets });
    const { eventId } = await insertDelivery(dataSource, endpoint.id);
    startWorker({ schedule: [50, 50] });

    expect(await settled(endpoint.id, eventId)).toMatchObject({
      status: 'failed',
      attempts: 3,
      last_status_code: 503,
      last_error: 'answered HTTP 503',
      delivered_at: null,
    });
    await sleep(300);
    expect(receiver.requestsWithId(eventId)).toHaveLength(3);
  });

  it('gives an attempt WEBHOOK_TIMEOUT_MS, then counts it as failed without a status', async () => {
    receiver.answer = () => 'hang';
    const endpoint = await insertEndpoint(dataSource, { url: receiver.url, secrets });
    const { eventId } = await insertDelivery(dataSource, endpoint.id);
    startWorker({ schedule: [], timeoutMs: 300 });

    expect(await settled(endpoint.id, eventId)).toMatchObject({ status: 'failed', attempts: 1, last_status_code: null, last_error: 'no answer within 300 ms' });
  });

  it('retries an attempt whose replica died once its claim lapses; the dead claim cannot record over it', async () => {
    const endpoint = await insertEndpoint(dataSource, { url: receiver.url, secrets });
    const { eventId } = await insertDelivery(dataSource, endpoint.id);
    // A replica claims the delivery and dies before its request goes out (or before it records the answer).
    const dead = new DeliveryStore(dataSource, [100], 500, secrets);
    const [claim] = await dead.claimDue(10);
    expect(claim).toMatchObject({ eventId, attempt: 1 });
    startWorker();

    await sleep(300);
    expect(receiver.requests).toHaveLength(0);
    expect(await settled(endpoint.id, eventId)).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(await dead.record(claim, { outcome: 'http_error', statusCode: 500, error: 'late' })).toBe('gone');
    expect(await deliveryRow(dataSource, endpoint.id, eventId)).toMatchObject({ status: 'delivered', last_status_code: 200 });
  });

  it('shares the table between replicas: every delivery goes out exactly once', async () => {
    receiver.answer = () => 200;
    const endpoint = await insertEndpoint(dataSource, { url: receiver.url, secrets });
    const events = await Promise.all(Array.from({ length: 30 }, () => insertDelivery(dataSource, endpoint.id)));
    startWorker({ concurrency: 3 });
    startWorker({ concurrency: 3 });

    for (const { eventId } of events) expect(await settled(endpoint.id, eventId)).toMatchObject({ status: 'delivered', attempts: 1 });
    expect(receiver.requests.map((request) => request.headers['webhook-id']).sort()).toEqual(events.map((event) => event.eventId).sort());
  });

  it('delivers at once when signalled, without waiting for its poll', async () => {
    const signal = new WorkSignal();
    const worker = new DeliveryWorker({
      store: new DeliveryStore(dataSource, [100], 5_000, secrets),
      sender: new DeliverySender(new AddressGuard(localOnly, true), 2_000),
      concurrency: 2,
      signal,
      pollIntervalMs: 60_000,
      logger: quiet,
    });
    worker.onApplicationBootstrap();
    workers.push(worker);
    await sleep(100);
    const endpoint = await insertEndpoint(dataSource, { url: receiver.url, secrets });
    const { eventId } = await insertDelivery(dataSource, endpoint.id);
    signal.notify();
    expect(await settled(endpoint.id, eventId, 2_000)).toMatchObject({ status: 'delivered' });
  });

  it('connects to the address the check resolved, not to a second lookup of the name', async () => {
    // `hooks.test` exists only in the guard's resolver: the request arrives only if the socket used its answer.
    const endpoint = await insertEndpoint(dataSource, { url: `http://hooks.test:${receiver.port}/in`, secrets });
    const { eventId } = await insertDelivery(dataSource, endpoint.id);
    startWorker();

    expect(await settled(endpoint.id, eventId)).toMatchObject({ status: 'delivered' });
    expect(receiver.requests[0].headers.host).toBe(`hooks.test:${receiver.port}`);
  });

  it('checks the address again at delivery: a name that now resolves to a private address is not called', async () => {
    const rebound: HostResolver = async () => ['10.0.0.1'];
    const endpoint = await insertEndpoint(dataSource, { url: 'https://hooks.example.com/in', secrets });
    const { eventId } = await insertDelivery(dataSource, endpoint.id);
    startWorker({ schedule: [], guard: new AddressGuard(rebound, false) });

    expect(await settled(endpoint.id, eventId)).toMatchObject({
      status: 'failed',
      last_status_code: null,
      last_error: expect.stringContaining('private address, which webhooks may not call'),
    });
  });

  it('never attempts the pending deliveries of a deleted endpoint', async () => {
    receiver.answer = () => 500;
    const endpoint = await insertEndpoint(dataSource, { url: receiver.url, secrets });
    const { eventId } = await insertDelivery(dataSource, endpoint.id);
    startWorker({ schedule: [300, 300] });
    await eventually(async () => receiver.requests.length, (count) => count >= 1);
    await dataSource.query('DELETE FROM webhooks.endpoints WHERE id = $1', [endpoint.id]);

    await sleep(800);
    expect(receiver.requestsWithId(eventId)).toHaveLength(1);
    expect(await deliveryRow(dataSource, endpoint.id, eventId)).toBeUndefined();
  });
});
