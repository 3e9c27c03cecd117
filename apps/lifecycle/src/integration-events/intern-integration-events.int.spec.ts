import { randomUUID } from 'node:crypto';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type IntegrationEvent, subjectsFor } from '@interns/contracts';
import { eventually, LifecycleHarness, principal } from '../testing/lifecycle.harness';

/**
 * Lifecycle's integration events as they reach JetStream from the built service (its relay, its translator),
 * through provisioning and teardown with a stand-in runtime driver on real NATS.
 */
describe('lifecycle: integration events', () => {
  let h: LifecycleHarness;
  const WS = randomUUID();
  const alice = principal(WS);

  beforeAll(async () => {
    h = await LifecycleHarness.start();
    await h.startLifecycle();
  });

  afterAll(async () => {
    await h?.stop();
  });

  it("publishes the intern's integration events: created, every status and progress change, deleted", async () => {
    const { intern: created } = await h.create(alice, { name: 'ora', provision: true, model: 'acme/m1' });
    const intern = await h.untilStatus(alice, created.id, 'running');
    await h.delete(alice, intern.id);
    await h.untilGone(alice, intern.id);

    const subjects = subjectsFor(h.prefix);
    const stream = subjects.eventStreamName('lifecycle');
    let published: IntegrationEvent[] = [];
    await eventually(async () => {
      const { state } = await (await jetstreamManager(h.nc)).streams.info(stream);
      const consumer = await jetstream(h.nc).consumers.get(stream);
      const events: IntegrationEvent[] = [];
      for await (const message of await consumer.fetch({ max_messages: state.messages, expires: 2_000 })) {
        const event = message.json<IntegrationEvent>();
        expect(message.subject).toBe(subjects.integrationEvent(event.type));
        expect(message.headers?.get('Nats-Msg-Id')).toBe(event.id);
        if (event.data.intern_id === intern.id) events.push(event);
      }
      expect(events.at(-1)?.type).toBe('intern.deleted');
      published = events;
    });
    const status = (previous: string | null, now: string, step: number | null = null) => ({
      type: 'intern.status_changed',
      data: {
        intern_id: intern.id,
        status: now,
        previous_status: previous,
        progress: step === null ? null : expect.objectContaining({ step_number: step, total_steps: 4 }),
      },
    });
    expect(published).toMatchObject([
      { type: 'intern.created', data: { intern_id: intern.id, workspace_id: WS, name: 'ora', model: 'acme/m1', created_by: 'member-1' } },
      status(null, 'stopped'),
      status('stopped', 'queued'),
      status('queued', 'provisioning', 1),
      status('provisioning', 'provisioning', 2),
      status('provisioning', 'provisioning', 3),
      status('provisioning', 'provisioning', 4),
      status('provisioning', 'running'),
      status('running', 'destroying'),
      { type: 'intern.deleted', data: { intern_id: intern.id } },
    ]);
    expect(published.every((event) => event.workspace_id === WS && event.version === 1)).toBe(true);
    expect(published.map((event) => event.sequence)).toEqual([1, 1, 2, 3, 4, 5, 6, 7, 8, 14]);
  });
});
