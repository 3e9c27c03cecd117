/**
 * A service's NATS handlers run inside the request they serve (NatsRequestContextInterceptor, installed by
 * bootstrapService): the caller's correlation id is known to the handler, also after an await, and
 * travels on with the RPCs the handler makes, without being passed. Real PostgreSQL and NATS.
 */
import 'reflect-metadata';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/transport-node';
import { Controller, DynamicModule, Module } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import { CORRELATION_HEADER, RpcReplyPacket, RpcRequestPacket } from '@interns/contracts';
import { RpcClient } from '@interns/messaging';
import { currentCorrelationId } from '@interns/observability';
import { createTestDatabase, TestDatabase, testNatsPrefix } from '@interns/testing';
import { bootstrapService, RunningService, ServiceDeps } from './service-bootstrap';

interface Seen {
  correlationId: string | null;
}

@Module({})
class ContextProbeModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    const rpc = new RpcClient(deps.nc);

    @Controller()
    class ContextProbeNatsController {
      @MessagePattern(`${deps.subjects.prefix}.runs.qry.whoami`)
      async whoami(): Promise<Seen> {
        await deps.dataSource.query('SELECT 1');
        return { correlationId: currentCorrelationId() ?? null };
      }

      /** Asks the echo responder, passing no correlation id: the one being handled must go along. */
      @MessagePattern(`${deps.subjects.prefix}.runs.qry.forward`)
      async forward(): Promise<Seen> {
        await new Promise((done) => setTimeout(done, 5));
        return rpc.request<Seen>(`${deps.subjects.prefix}.lifecycle.qry.echo`, {}, { timeoutMs: 5000 });
      }
    }
    return { module: ContextProbeModule, controllers: [ContextProbeNatsController] };
  }
}

describe('request context across a NATS hop', () => {
  let db: TestDatabase;
  let running: RunningService;
  let client: NatsConnection;
  let rpc: RpcClient;
  const prefix = testNatsPrefix();

  beforeAll(async () => {
    db = await createTestDatabase();
    running = await bootstrapService({
      service: 'runs',
      schema: 'context_probe_test',
      migrations: [],
      rootModule: (deps) => ContextProbeModule.forRoot(deps),
      port: (config) => config.runsPort,
      env: { DATABASE_URL: db.url, NATS_PREFIX: prefix, RUNS_PORT: '0' },
      handleSignals: false,
      logger: false,
    });
    client = await connect({ servers: running.deps.config.natsUrl });
    rpc = new RpcClient(client);
    // A stand-in for another service: answers with the correlation header it received.
    client.subscribe(`${prefix}.lifecycle.qry.echo`, {
      callback: (_error, msg) => {
        const packet = msg.json<RpcRequestPacket>();
        const reply: RpcReplyPacket<Seen> = {
          id: packet.id,
          response: { correlationId: msg.headers?.get(CORRELATION_HEADER) || null },
          isDisposed: true,
        };
        msg.respond(JSON.stringify(reply));
      },
    });
    await client.flush();
  });

  afterAll(async () => {
    await running?.close();
    await client?.close();
    await db?.drop();
  });

  it("gives the handler the caller's correlation id, after awaits too", async () => {
    const seen = await rpc.request<Seen>(`${prefix}.runs.qry.whoami`, {}, { timeoutMs: 5000, correlationId: 'corr-whoami' });
    expect(seen).toEqual({ correlationId: 'corr-whoami' });
  });

  it('carries the id on with the RPCs the handler makes', async () => {
    const seen = await rpc.request<Seen>(`${prefix}.runs.qry.forward`, {}, { timeoutMs: 5000, correlationId: 'corr-forward' });
    expect(seen).toEqual({ correlationId: 'corr-forward' });
  });

  it('keeps concurrent requests apart', async () => {
    const ids = Array.from({ length: 8 }, (_, i) => `corr-${i}`);
    const seen = await Promise.all(
      ids.map((correlationId) => rpc.request<Seen>(`${prefix}.runs.qry.forward`, {}, { timeoutMs: 5000, correlationId })),
    );
    expect(seen.map((answer) => answer.correlationId)).toEqual(ids);
  });

  it('knows no id when the caller sent none', async () => {
    expect(await rpc.request<Seen>(`${prefix}.runs.qry.forward`, {}, { timeoutMs: 5000 })).toEqual({ correlationId: null });
  });
});
