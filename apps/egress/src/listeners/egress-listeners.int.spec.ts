/**
 * A listener's lifetime (interface section 19): one nobody closes expires after `maxLifetimeMs`, one that is renewed
 * (a terminal's, which outlives any command) lives on. Real proxy, real unix sockets, real NATS with a stand-in
 * lifecycle answering the intern's egress context.
 */
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { subjectsFor, type RpcRequestPacket } from '@interns/contracts';
import { AddressPolicy, EgressCa, EgressProxy, newEgressCaPem, resolverWith } from '@interns/egress-proxy';
import { testNatsPrefix } from '@interns/testing';
import { VaultOpener } from '@interns/vault';
import { EgressContextClient } from './egress-context.client';
import { EgressListeners } from './egress-listeners';
import { SecretPlaceholders } from './secret-placeholders';

const LIFETIME_MS = 800;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('EgressListeners: expiry and renewal', () => {
  const subjects = subjectsFor(testNatsPrefix());
  let nc: NatsConnection;
  let lifecycle: Subscription;
  let dir: string;
  let proxy: EgressProxy;
  let listeners: EgressListeners;

  beforeAll(async () => {
    nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    lifecycle = nc.subscribe(subjects.lifecycle.egressContext, {
      callback: (error, msg) => {
        if (error) return;
        const packet = msg.json<RpcRequestPacket>();
        msg.respond(JSON.stringify({ id: packet.id, response: { allow: [], secrets: [] }, isDisposed: true }));
      },
    });
    dir = await mkdtemp(join(tmpdir(), 'egress-listeners-'));
    const ca = await EgressCa.fromPem(await newEgressCaPem());
    proxy = new EgressProxy({
      ca,
      ports: [443],
      addressPolicy: new AddressPolicy({ allowPrivate: false, platformEndpoints: [] }),
      resolver: resolverWith(new Map()),
      bytesPerRun: 1024,
      connectionsPerIntern: 4,
      onLog: () => undefined,
    });
    listeners = new EgressListeners({
      proxy,
      contexts: new EgressContextClient(nc, subjects.lifecycle),
      opener: await VaultOpener.load({ masterKey: null, keysDir: join(dir, 'keys'), nodeEnv: 'test' }),
      placeholders: new SecretPlaceholders('placeholder-secret-under-test'),
      socketDir: join(dir, 'sockets'),
      instanceId: randomUUID(),
      caCertificate: ca.certificatePem,
      maxLifetimeMs: LIFETIME_MS,
    });
    await listeners.prepare();
  });

  afterAll(async () => {
    await listeners?.closeAll();
    lifecycle?.unsubscribe();
    await nc?.drain();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('closes a listener nobody renews after its lifetime, and keeps one renewed within it', async () => {
    const internId = randomUUID();
    const command = await listeners.open({ internId, runId: null });
    const terminal = await listeners.open({ internId, runId: null });
    expect(existsSync(command.socketPath) && existsSync(terminal.socketPath)).toBe(true);
    for (let elapsed = 0; elapsed < LIFETIME_MS * 3; elapsed += LIFETIME_MS / 4) {
      expect(listeners.renew({ socketPath: terminal.socketPath })).toEqual({ renewed: true });
      await sleep(LIFETIME_MS / 4);
    }
    expect(existsSync(terminal.socketPath)).toBe(true);
    expect(existsSync(command.socketPath)).toBe(false);
    expect(listeners.renew({ socketPath: command.socketPath })).toEqual({ renewed: false });
    await listeners.close({ socketPath: terminal.socketPath });
    expect(existsSync(terminal.socketPath)).toBe(false);
    expect(listeners.renew({ socketPath: terminal.socketPath })).toEqual({ renewed: false });
  });
});
