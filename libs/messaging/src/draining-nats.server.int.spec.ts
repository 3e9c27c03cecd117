/**
 * Integration (real NATS): a service replica that closes while requests are in flight and arriving answers
 * what it took and hands the rest to the other members of its queue group.
 */
import 'reflect-metadata';
import { CallHandler, Controller, INestMicroservice, Injectable, Module, NestInterceptor, UseInterceptors } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { NatsConnection } from '@nats-io/transport-node';
import { testNatsPrefix } from '@interns/testing';
import { drainingNatsStrategy } from './draining-nats.server';
import { connectNats } from './nats-connection';
import { RpcClient } from './rpc-client';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const prefix = testNatsPrefix();
const SLOW = `${prefix}.lifecycle.cmd.slow`;
const WHO = `${prefix}.lifecycle.qry.who`;
/** Longer than Nest's own grace period (2 s), after which its NATS server drops the replies still due. */
const HELD_PAST_NEST_GRACE_MS = 2500;

/** A gate the test opens; the slow handler waits on it. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((done) => {
    open = done;
  });
  return { open, opened };
}

/** Like the services' interceptors: the handler's result becomes an Observable that Nest subscribes to later. */
@Injectable()
class PassThroughInterceptor implements NestInterceptor {
  intercept(_context: unknown, next: CallHandler) {
    return next.handle();
  }
}

function replicaModule(name: string, slowGate: Promise<void>, slowStarted: () => void) {
  @Controller()
  @UseInterceptors(PassThroughInterceptor)
  class ReplicaController {
    @MessagePattern(SLOW)
    async slow(@Payload() data: { n: number }) {
      slowStarted();
      await slowGate;
      return { replica: name, n: data.n };
    }

    @MessagePattern(WHO)
    who() {
      return { replica: name };
    }
  }
  @Module({ controllers: [ReplicaController] })
  class ReplicaModule {}
  return ReplicaModule;
}

async function startReplica(name: string, slowGate: Promise<void>, slowStarted: () => void = () => undefined) {
  const replica = await NestFactory.createMicroservice(replicaModule(name, slowGate, slowStarted), {
    ...drainingNatsStrategy({ url: NATS_URL, queue: 'lifecycle' }),
    logger: false,
  });
  await replica.listen();
  await replica.unwrap<NatsConnection>().flush();
  return replica;
}

let nc: NatsConnection;
let client: RpcClient;
const started: INestMicroservice[] = [];

beforeAll(async () => {
  nc = await connectNats({ url: NATS_URL, name: 'draining-server-test' });
  client = new RpcClient(nc);
});

afterAll(async () => {
  await Promise.allSettled(started.map((replica) => replica.close()));
  await nc.drain();
});

it('answers a request in flight when it closes, even one held past Nest’s grace period', async () => {
  const slowGate = gate();
  let handlerStarted!: () => void;
  const inHandler = new Promise<void>((done) => {
    handlerStarted = done;
  });
  const closing = await startReplica('a', slowGate.opened, () => handlerStarted());
  started.push(closing);

  const reply = client.request<{ replica: string; n: number }>(SLOW, { n: 1 }, { timeoutMs: 20_000 });
  await inHandler;
  let closed = false;
  const close = closing.close().then(() => {
    closed = true;
  });
  await new Promise((done) => setTimeout(done, HELD_PAST_NEST_GRACE_MS));
  expect(closed).toBe(false);

  slowGate.open();
  await expect(reply).resolves.toEqual({ replica: 'a', n: 1 });
  await close;
  expect(closed).toBe(true);
}, 30_000);

it('hands requests that arrive while it closes to the rest of its queue group, losing none', async () => {
  const slowGate = gate();
  let handlerStarted!: () => void;
  const inHandler = new Promise<void>((done) => {
    handlerStarted = done;
  });
  const leaving = await startReplica('leaving', slowGate.opened, () => handlerStarted());
  const staying = await startReplica('staying', Promise.resolve());
  started.push(leaving, staying);

  // Keep the leaving replica busy so that its close is in progress while the burst arrives.
  let held: Promise<{ replica: string }> | null = null;
  while (held === null) {
    const attempt = client.request<{ replica: string }>(SLOW, { n: 0 }, { timeoutMs: 20_000 });
    const first = await Promise.race([attempt, inHandler.then(() => null)]);
    if (first === null) held = attempt; // the leaving replica took it
  }
  const close = leaving.close();
  const burst = await Promise.all(
    Array.from({ length: 200 }, () => client.request<{ replica: string }>(WHO, {}, { timeoutMs: 10_000 })),
  );
  slowGate.open();
  await expect(held).resolves.toEqual({ replica: 'leaving', n: 0 });
  await close;

  expect(burst).toHaveLength(200);
  expect(burst.every((answer) => answer.replica === 'staying' || answer.replica === 'leaving')).toBe(true);
  // Once its subscriptions are drained the leaving replica gets nothing more.
  const after = await Promise.all(Array.from({ length: 20 }, () => client.request<{ replica: string }>(WHO, {}, { timeoutMs: 5_000 })));
  expect(after.every((answer) => answer.replica === 'staying')).toBe(true);
}, 30_000);
