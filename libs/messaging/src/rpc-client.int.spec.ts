import 'reflect-metadata';
import { Controller, Module, UseFilters } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { INestMicroservice } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { NatsConnection } from '@nats-io/transport-node';
import { DomainError } from '@interns/contracts';
import { testNatsPrefix } from '@interns/testing';
import { DomainErrorRpcFilter } from './domain-error.filter';
import { connectNats, natsTransportOptions } from './nats-connection';
import { RemoteServiceError, RpcClient, RpcTimeoutError, RpcUnavailableError } from './rpc-client';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const prefix = testNatsPrefix();
const subject = (name: string) => `${prefix}.lifecycle.qry.${name}`;

function buildModule() {
  @Controller()
  @UseFilters(new DomainErrorRpcFilter())
  class EchoController {
    @MessagePattern(subject('echo'))
    echo(@Payload() data: { text: string }) {
      return { echoed: data.text };
    }

    @MessagePattern(subject('refuse'))
    refuse(): never {
      throw new DomainError('name_taken', 'an intern with this name already exists');
    }

    @MessagePattern(subject('crash'))
    crash(): never {
      throw new Error('secret internals');
    }

    @MessagePattern(subject('slow'))
    async slow() {
      await new Promise((resolve) => setTimeout(resolve, 1500));
      return { late: true };
    }
  }

  @Module({ controllers: [EchoController] })
  class EchoModule {}
  return EchoModule;
}

describe('RpcClient against a NestJS NATS microservice', () => {
  let service: INestMicroservice;
  let nc: NatsConnection;
  let client: RpcClient;

  beforeAll(async () => {
    service = await NestFactory.createMicroservice(buildModule(), {
      ...natsTransportOptions({ url: NATS_URL, queue: 'lifecycle' }),
      logger: false,
    });
    await service.listen();
    nc = await connectNats({ url: NATS_URL, name: 'rpc-client-test' });
    client = new RpcClient(nc);
  });

  afterAll(async () => {
    await nc.drain();
    await service.close();
  });

  it('returns the handler result', async () => {
    await expect(client.request(subject('echo'), { text: 'hi' }, { timeoutMs: 2000 })).resolves.toEqual({
      echoed: 'hi',
    });
  });

  it('carries a domain refusal as a typed error with its reason', async () => {
    const error = await client.request(subject('refuse'), {}, { timeoutMs: 2000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RemoteServiceError);
    expect((error as RemoteServiceError).payload).toEqual({
      kind: 'service_error',
      reason: 'name_taken',
      message: 'an intern with this name already exists',
    });
  });

  it('hides unexpected failures behind an internal_error without internals', async () => {
    const error = await client.request(subject('crash'), {}, { timeoutMs: 2000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RemoteServiceError);
    expect((error as RemoteServiceError).payload).toEqual({ kind: 'service_error', reason: 'internal_error', message: 'internal error' });
  });

  it('fails at once with RpcUnavailableError when nobody serves the subject', async () => {
    const started = Date.now();
    const error = await client.request(subject('nobody'), {}, { timeoutMs: 5000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcUnavailableError);
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('gives up at its deadline with RpcTimeoutError', async () => {
    const started = Date.now();
    const error = await client.request(subject('slow'), {}, { timeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcTimeoutError);
    expect(Date.now() - started).toBeLessThan(1200);
  });
});
