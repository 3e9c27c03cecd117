import 'reflect-metadata';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { Controller, DynamicModule, Inject, Module } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import { DataSource, MigrationInterface, QueryRunner } from 'typeorm';
import { DomainError } from '@interns/contracts';
import { RemoteServiceError, RpcClient } from '@interns/messaging';
import { createTestDatabase, TestDatabase, testNatsPrefix } from '@interns/testing';
import { bootstrapService, NATS_CONNECTION, RunningService, ServiceDeps } from './service-bootstrap';

class CreateProbe1700000000000 implements MigrationInterface {
  name = 'CreateProbe1700000000000';
  async up(runner: QueryRunner): Promise<void> {
    await runner.query('CREATE TABLE bootstrap_test.probe (id int PRIMARY KEY)');
  }
  async down(runner: QueryRunner): Promise<void> {
    await runner.query('DROP TABLE bootstrap_test.probe');
  }
}

@Module({})
class ProbeModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    @Controller()
    class ProbeNatsController {
      constructor(
        private readonly dataSource: DataSource,
        @Inject(NATS_CONNECTION) private readonly nc: NatsConnection,
      ) {}

      @MessagePattern(`${deps.subjects.prefix}.runs.qry.probe`)
      async probe(): Promise<{ rows: number; sameConnection: boolean }> {
        const [{ n }] = await this.dataSource.query('SELECT count(*)::int AS n FROM bootstrap_test.probe');
        return { rows: n, sameConnection: this.nc === deps.nc };
      }

      @MessagePattern(`${deps.subjects.prefix}.runs.qry.refuse`)
      refuse(): never {
        throw new DomainError('not_found', 'no such thing');
      }
    }
    return { module: ProbeModule, controllers: [ProbeNatsController] };
  }
}

describe('bootstrapService', () => {
  let db: TestDatabase;
  let running: RunningService;
  let client: NatsConnection;
  let rpc: RpcClient;
  const prefix = testNatsPrefix();

  beforeAll(async () => {
    db = await createTestDatabase();
    running = await bootstrapService({
      service: 'runs',
      schema: 'bootstrap_test',
      migrations: [CreateProbe1700000000000],
      rootModule: (deps) => ProbeModule.forRoot(deps),
      port: (config) => config.runsPort,
      env: { DATABASE_URL: db.url, NATS_PREFIX: prefix, RUNS_PORT: '0' },
      handleSignals: false,
      logger: false,
    });
    client = await connect({ servers: running.deps.config.natsUrl });
    rpc = new RpcClient(client);
  });

  afterAll(async () => {
    await running?.close();
    await client?.close();
    await db?.drop();
  });

  it('migrates the schema, injects the deps and answers on run-time subjects', async () => {
    const reply = await rpc.request(`${prefix}.runs.qry.probe`, {}, { timeoutMs: 2000 });
    expect(reply).toEqual({ rows: 0, sameConnection: true });
  });

  it('answers a DomainError as a service error payload', async () => {
    const refusal = rpc.request(`${prefix}.runs.qry.refuse`, {}, { timeoutMs: 2000 });
    await expect(refusal).rejects.toBeInstanceOf(RemoteServiceError);
    await expect(refusal).rejects.toMatchObject({ payload: { reason: 'not_found', message: 'no such thing' } });
  });

  it('serves health on the bound port, counting both NATS connections', async () => {
    const response = await fetch(`http://127.0.0.1:${running.port}/health/ready`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ details: { nats: { status: 'up', connections: 2 } } });
  });

  it('closes the pool and the NATS connection on close()', async () => {
    const { dataSource, nc } = running.deps;
    await running.close();
    expect(dataSource.isInitialized).toBe(false);
    expect(nc.isClosed()).toBe(true);
  });
});
