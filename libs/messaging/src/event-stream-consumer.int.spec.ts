import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { jetstream, type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Counter } from 'prom-client';
import { metricsRegistry } from '@interns/metrics';
import { testNatsPrefix } from '@interns/testing';
import { EventStreamConsumer } from './event-stream-consumer';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const METRIC = 'event_stream_consumer_spec_events_total';

interface SpecEvent {
  id: string;
  type: string;
}

/** The shared consumer on real JetStream: what the handler says is what is settled, and every outcome is counted by source. */
describe('EventStreamConsumer', () => {
  const prefix = testNatsPrefix().replace(/[^A-Za-z0-9_-]/g, '_');
  const streamName = `${prefix}_SPEC_EVENTS`;
  const subject = `${testNatsPrefix()}.spec.events`;
  const logger = { log: () => undefined, warn: () => undefined, error: () => undefined };
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let consumer: EventStreamConsumer<SpecEvent> | undefined;

  beforeAll(async () => {
    nc = await connect({ servers: NATS_URL, name: 'event-stream-consumer.int.spec' });
    jsm = await jetstreamManager(nc);
  });

  afterAll(async () => {
    await consumer?.stop();
    await jsm?.streams.delete(streamName).catch(() => undefined);
    await nc?.close();
  });

  async function counted(source: string, outcome: string): Promise<number> {
    const metric = metricsRegistry.getSingleMetric(METRIC) as Counter | undefined;
    const { values } = (await metric?.get()) ?? { values: [] };
    return values.find((value) => value.labels.source === source && value.labels.outcome === outcome)?.value ?? 0;
  }

  async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('condition not met in time');
      await sleep(25);
    }
  }

  it('acks what the handler settles, offers a held event again, drops what it cannot read, counting each by source', async () => {
    const handled: string[] = [];
    const heldOnce = new Set<string>();
    consumer = new EventStreamConsumer<SpecEvent>({
      nats: nc,
      source: 'spec-source',
      streamName,
      streamSubjects: [subject],
      durableName: 'spec',
      name: 'spec consumer',
      metric: { name: METRIC, help: 'events handled by the spec consumer' },
      parse: (data) => {
        const event = JSON.parse(new TextDecoder().decode(data)) as SpecEvent;
        if (typeof event.id !== 'string') throw new Error('no id');
        return event;
      },
      handle: async (event) => {
        if (event.type === 'wait' && !heldOnce.has(event.id)) {
          heldOnce.add(event.id);
          return { settle: 'nak', outcome: 'held', reason: 'not yet' };
        }
        handled.push(event.id);
        return { settle: 'ack', outcome: 'applied' };
      },
      nakDelayMs: 20,
      retryDelayMs: 20,
      logger,
    });
    consumer.start();
    await until(() => jsm.streams.info(streamName).then(() => true, () => false));

    const js = jetstream(nc);
    const now = randomUUID();
    const later = randomUUID();
    await js.publish(subject, JSON.stringify({ id: now, type: 'go' }));
    await js.publish(subject, JSON.stringify({ id: later, type: 'wait' }));
    await js.publish(subject, 'not json');

    await until(async () => handled.length === 2 && (await counted('spec-source', 'rejected')) === 1);
    expect(handled).toEqual([now, later]);
    expect(await counted('spec-source', 'applied')).toBe(2);
    expect(await counted('spec-source', 'held')).toBe(1);
    expect(await counted('other-source', 'applied')).toBe(0);
    const info = await jsm.consumers.info(streamName, 'spec');
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_pending).toBe(0);
  });
});
