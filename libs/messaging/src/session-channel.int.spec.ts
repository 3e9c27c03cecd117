import type { NatsConnection } from '@nats-io/transport-node';
import { sessionRefusal, subjectsFor } from '@interns/contracts';
import { testNatsPrefix } from '@interns/testing';
import { connectNats } from './nats-connection';
import { NO_OWNER, SessionChannel } from './session-channel';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const TIMEOUT_MS = 2000;

describe('SessionChannel', () => {
  let nc: NatsConnection;
  let channel: SessionChannel;

  beforeAll(async () => {
    nc = await connectNats({ url: NATS_URL, name: 'session-channel-test' });
    channel = new SessionChannel(nc, subjectsFor(testNatsPrefix()).runs);
  });

  afterAll(async () => {
    await nc.drain();
  });

  it('carries a refusal with its reason from the owner to the sender', async () => {
    const subscription = channel.serve('session-refuses', async () => sessionRefusal('run_not_active', 'the run has already ended'));
    try {
      expect(await channel.send('session-refuses', { type: 'probe' }, TIMEOUT_MS)).toEqual(sessionRefusal('run_not_active', 'the run has already ended'));
    } finally {
      subscription.unsubscribe();
    }
  });

  it('answers an owner that failed as internal_error', async () => {
    const subscription = channel.serve('session-fails', async () => {
      throw new Error('the store is gone');
    });
    try {
      expect(await channel.send('session-fails', { type: 'probe' }, TIMEOUT_MS)).toEqual(sessionRefusal('internal_error', 'the store is gone'));
    } finally {
      subscription.unsubscribe();
    }
  });

  it('lets no unknown reason cross: a reply outside ERROR_REASONS rejects', async () => {
    const subscription = nc.subscribe(channel.subjectOf('session-unknown'), {
      callback: (_error, msg) => {
        msg.respond(JSON.stringify({ ok: false, kind: 'service_error', reason: 'no_run', message: 'the run has ended' }));
      },
    });
    try {
      await expect(channel.send('session-unknown', { type: 'probe' }, TIMEOUT_MS)).rejects.toThrow(/sent no session reply/);
    } finally {
      subscription.unsubscribe();
    }
  });

  it('says NO_OWNER when nobody serves the session', async () => {
    expect(await channel.send('session-nobody', { type: 'probe' }, TIMEOUT_MS)).toBe(NO_OWNER);
  });
});
