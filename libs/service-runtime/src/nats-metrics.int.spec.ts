import 'reflect-metadata';
import { Controller, INestMicroservice, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { MessagePattern } from '@nestjs/microservices';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Counter, Histogram } from 'prom-client';
import { DomainError } from '@interns/contracts';
import { connectNats, DomainErrorRpcFilter, natsTransportOptions, RpcClient } from '@interns/messaging';
import { testNatsPrefix } from '@interns/testing';
import { metricsRegistry } from './metrics';
import { NatsHandlerMetricsInterceptor } from './nats-handler-metrics.interceptor';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const prefix = `${testNatsPrefix()}.node-1`;
const subject = (name: string) => `${prefix}.lifecycle.qry.${name}`;
const label = (name: string) => `lifecycle.qry.${name}`;
const SLOW_MS = 1_500;

function buildModule() {
  @Controller()
  class ExampleController {
    @MessagePattern(subject('echo'))
    echo() {
      return { ok: true };
    }

    @MessagePattern(subject('refuse'))
    refuse(): never {
      throw new DomainError('name_taken', 'taken');
    }

    @MessagePattern(subject('crash'))
    crash(): never {
      throw new Error('internals');
    }

    @MessagePattern(subject('slow'))
    async slow() {
      await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
      return { late: true };
    }
  }

  @Module({ controllers: [ExampleController] })
  class ExampleModule {}
  return ExampleModule;
}

type Labels = Record<string, string>;

async function sample(name: string, metric: string, labels: Labels): Promise<number> {
  const found = metricsRegistry.getSingleMetric(name) as Counter | Histogram | undefined;
  const { values } = (await found?.get()) ?? { values: [] };
  const match = values.find(
    (value) =>
      ('metricName' in value ? value.metricName : name) === metric &&
      Object.entries(labels).every(([key, wanted]) => value.labels[key] === wanted),
  );
  return match?.value ?? 0;
}

const requests = (labels: Labels) =>
  sample('interns_nats_request_duration_seconds', 'interns_nats_request_duration_seconds_count', labels);
const requestErrors = (labels: Labels) => sample('interns_nats_request_errors_total', 'interns_nats_request_errors_total', labels);
const handled = (labels: Labels) => sample('interns_nats_handled_total', 'interns_nats_handled_total', labels);

describe('NATS request metrics, caller (RpcClient) and handler (interceptor) sides', () => {
  let service: INestMicroservice;
  let nc: NatsConnection;
  let client: RpcClient;

  beforeAll(async () => {
    service = await NestFactory.createMicroservice(buildModule(), {
      ...natsTransportOptions({ url: NATS_URL, queue: 'lifecycle' }),
      logger: false,
    });
    service.useGlobalFilters(new DomainErrorRpcFilter());
    service.useGlobalInterceptors(new NatsHandlerMetricsInterceptor());
    await service.listen();
    nc = await connectNats({ url: NATS_URL, name: 'nats-metrics-test' });
    client = new RpcClient(nc);
  });

  afterAll(async () => {
    await nc.drain();
    await service.close();
  });

  it('an answered request: ok on both sides, no error, labelled without the prefix', async () => {
    await client.request(subject('echo'), {}, { timeoutMs: 5_000 });
    expect(await requests({ subject: label('echo'), outcome: 'ok' })).toBe(1);
    expect(await handled({ subject: label('echo'), outcome: 'ok' })).toBe(1);
    expect(await requestErrors({ subject: label('echo') })).toBe(0);
    expect(await metricsRegistry.metrics()).not.toContain(prefix);
  });

  it('a refusal is an answer: refused on both sides, not an error', async () => {
    await expect(client.request(subject('refuse'), {}, { timeoutMs: 5_000 })).rejects.toThrow('taken');
    expect(await requests({ subject: label('refuse'), outcome: 'refused' })).toBe(1);
    expect(await handled({ subject: label('refuse'), outcome: 'refused' })).toBe(1);
    expect(await requestErrors({ subject: label('refuse') })).toBe(0);
  });

  it('a handler fault: failed on both sides, a remote_failure error for the caller', async () => {
    await expect(client.request(subject('crash'), {}, { timeoutMs: 5_000 })).rejects.toThrow();
    expect(await requests({ subject: label('crash'), outcome: 'failed' })).toBe(1);
    expect(await handled({ subject: label('crash'), outcome: 'failed' })).toBe(1);
    expect(await requestErrors({ subject: label('crash'), reason: 'remote_failure' })).toBe(1);
  });

  it('no reply in time: a timeout for the caller; the handler still counts its late answer', async () => {
    await expect(client.request(subject('slow'), {}, { timeoutMs: 100 })).rejects.toThrow('no reply');
    expect(await requests({ subject: label('slow'), outcome: 'timeout' })).toBe(1);
    expect(await requestErrors({ subject: label('slow'), reason: 'timeout' })).toBe(1);
    const deadline = Date.now() + SLOW_MS + 10_000;
    while ((await handled({ subject: label('slow'), outcome: 'ok' })) === 0) {
      if (Date.now() > deadline) throw new Error('the slow handler was never counted');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  it('nobody serving the subject: unavailable, reason no_responders', async () => {
    await expect(client.request(subject('nobody'), {}, { timeoutMs: 5_000 })).rejects.toThrow('no service');
    expect(await requests({ subject: label('nobody'), outcome: 'unavailable' })).toBe(1);
    expect(await requestErrors({ subject: label('nobody'), reason: 'no_responders' })).toBe(1);
  });
});
