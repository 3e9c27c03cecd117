/**
 * Integration (real NATS): handlers on the lean path (LeanNatsHandler) answer with the body itself, refuse and
 * fail with the same packets as `@MessagePattern` handlers, are observed once each, and count as in flight for
 * the server's drain. RpcClient reads both reply forms.
 */
import 'reflect-metadata';
import { Controller, INestMicroservice, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MessagePattern } from '@nestjs/microservices';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { DomainError, RPC_BODY_REPLY_HEADER, RPC_BODY_REPLY_VALUE } from '@interns/contracts';
import { testNatsPrefix } from '@interns/testing';
import { DomainErrorRpcFilter } from './domain-error.filter';
import { DrainingNatsServer, drainingNatsStrategy } from './draining-nats.server';
import type { LeanNatsHandler, LeanRequest } from './lean-nats-handler';
import { connectNats } from './nats-connection';
import { RemoteServiceError, RpcClient } from './rpc-client';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const prefix = testNatsPrefix();
const LEAN_ECHO = `${prefix}.lifecycle.qry.lean-echo`;
const LEAN_REFUSE = `${prefix}.lifecycle.qry.lean-refuse`;
const LEAN_FAIL = `${prefix}.lifecycle.qry.lean-fail`;
const LEAN_SLOW = `${prefix}.lifecycle.qry.lean-slow`;
const NEST_ECHO = `${prefix}.lifecycle.qry.nest-echo`;

@Controller()
class NestHandlers {
  @MessagePattern(NEST_ECHO)
  echo(data: { text: string }) {
    return { echoed: data.text, via: 'nest' };
  }
}

@Module({ controllers: [NestHandlers] })
class HandlersModule {}

let release: () => void = () => undefined;
const handlers: LeanNatsHandler<{ text: string }>[] = [
  { subject: LEAN_ECHO, handle: async (request) => ({ echoed: request.text, via: 'lean' }) },
  {
    subject: LEAN_REFUSE,
    handle: async () => {
      throw new DomainError('not_found', 'no such intern');
    },
  },
  {
    subject: LEAN_FAIL,
    handle: async () => {
      throw new Error('the database is on fire: secret internals');
    },
  },
  {
    subject: LEAN_SLOW,
    handle: () => new Promise((done) => (release = () => done({ slow: true }))),
  },
];

let service: INestMicroservice;
let server: DrainingNatsServer;
let nc: NatsConnection;
let client: RpcClient;
const observed: { subject: string; correlationId: string | undefined }[] = [];

beforeAll(async () => {
  const strategy = drainingNatsStrategy({ url: NATS_URL, queue: 'lifecycle' });
  server = strategy.strategy;
  server.serveLean(handlers as LeanNatsHandler<unknown>[], (request: LeanRequest, handle) => {
    observed.push({ subject: request.subject, correlationId: request.correlationId });
    return handle();
  });
  service = await NestFactory.createMicroservice(HandlersModule, { ...strategy, logger: false });
  service.useGlobalFilters(new DomainErrorRpcFilter());
  await service.listen();
  await service.unwrap<NatsConnection>().flush();
  nc = await connectNats({ url: NATS_URL, name: 'lean-handler-test' });
  client = new RpcClient(nc);
});

afterAll(async () => {
  await service?.close();
  await nc?.close();
});

describe('the lean path', () => {
  it('answers with the body itself, marked by its header', async () => {
    const raw = await connect({ servers: NATS_URL });
    try {
      const reply = await raw.request(LEAN_ECHO, JSON.stringify({ id: '1', pattern: LEAN_ECHO, data: { text: 'hi' } }), {
        timeout: 5000,
      });
      expect(reply.headers?.get(RPC_BODY_REPLY_HEADER)).toBe(RPC_BODY_REPLY_VALUE);
      expect(reply.json()).toEqual({ echoed: 'hi', via: 'lean' });
    } finally {
      await raw.close();
    }
  });

  it('is read by RpcClient.request like a packet reply, with the correlation id passed on', async () => {
    await expect(client.request(LEAN_ECHO, { text: 'a' }, { timeoutMs: 5000, correlationId: 'corr-lean-1' })).resolves.toEqual({
      echoed: 'a',
      via: 'lean',
    });
    await expect(client.request(NEST_ECHO, { text: 'b' }, { timeoutMs: 5000 })).resolves.toEqual({ echoed: 'b', via: 'nest' });
    expect(observed).toContainEqual({ subject: LEAN_ECHO, correlationId: 'corr-lean-1' });
  });

  it('gives requestBody the exact bytes of a body reply, and a packet response serialized', async () => {
    const lean = await client.requestBody(LEAN_ECHO, { text: 'c' }, { timeoutMs: 5000 });
    expect(new TextDecoder().decode(lean)).toBe('{"echoed":"c","via":"lean"}');
    const nest = await client.requestBody(NEST_ECHO, { text: 'd' }, { timeoutMs: 5000 });
    expect(JSON.parse(new TextDecoder().decode(nest))).toEqual({ echoed: 'd', via: 'nest' });
  });

  it('answers a refusal as a typed error with its reason, on both request forms', async () => {
    for (const call of [client.request(LEAN_REFUSE, {}, { timeoutMs: 5000 }), client.requestBody(LEAN_REFUSE, {}, { timeoutMs: 5000 })]) {
      const error = await call.catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(RemoteServiceError);
      expect((error as RemoteServiceError).payload).toEqual({ kind: 'service_error', reason: 'not_found', message: 'no such intern' });
    }
  });

  it('hides an unexpected failure behind internal_error, without internals', async () => {
    const error = await client.requestBody(LEAN_FAIL, {}, { timeoutMs: 5000 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RemoteServiceError);
    expect((error as RemoteServiceError).payload).toEqual({ kind: 'service_error', reason: 'internal_error', message: 'internal error' });
  });

  it('counts a lean request as in flight until it is answered', async () => {
    const pending = client.request(LEAN_SLOW, {}, { timeoutMs: 5000 });
    const deadline = Date.now() + 5000;
    while (server.requestsInFlight === 0 && Date.now() < deadline) await new Promise((tick) => setTimeout(tick, 10));
    expect(server.requestsInFlight).toBe(1);
    release();
    await expect(pending).resolves.toEqual({ slow: true });
    expect(server.requestsInFlight).toBe(0);
  });

  it('refuses a subject served both ways', async () => {
    const strategy = drainingNatsStrategy({ url: NATS_URL, queue: 'lifecycle' });
    strategy.strategy.serveLean([{ subject: NEST_ECHO, handle: async () => ({}) }]);
    const twice = await NestFactory.createMicroservice(HandlersModule, { ...strategy, logger: false });
    await expect(twice.listen()).rejects.toThrow(`${NEST_ECHO} is both a lean handler and a @MessagePattern`);
    await twice.close().catch(() => undefined);
  });
});
