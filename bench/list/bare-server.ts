import { pathToFileURL } from 'node:url';
import Fastify, { FastifyInstance } from 'fastify';
import pg from 'pg';
import { BenchCaller, callerFromEnv, listPageSource, parseLimit, POOL_SIZE, requiredEnv, runAsProcess } from './list-page';

/**
 * The baseline of the list benchmark: one process, one Fastify server, one pg pool (the size of
 * lifecycle's), no authentication, no NATS. It answers `GET /interns` for one fixed workspace and member
 * with the same SQL and JSON as `GET /api/v1/interns` through the gateway and lifecycle.
 */
export interface BareServerOptions extends BenchCaller {
  databaseUrl: string;
  port: number;
}

export interface BareServer {
  url: string;
  close(): Promise<void>;
}

export async function startBareServer(options: BareServerOptions): Promise<BareServer> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: POOL_SIZE, application_name: 'bench-bare' });
  let app: FastifyInstance | null = null;
  try {
    const source = await listPageSource(pool, options);
    app = Fastify({ logger: false });
    app.get('/health/ready', async () => ({ status: 'ok' }));
    app.get('/interns', async (request, reply) => {
      const limit = parseLimit((request.query as Record<string, unknown>).limit);
      if (limit === null) return reply.code(400).send({ error: { code: 400, message: 'bad limit' } });
      return source.page(limit);
    });
    await app.listen({ host: '127.0.0.1', port: options.port });
  } catch (error) {
    await app?.close();
    await pool.end();
    throw error;
  }
  const server = app;
  return {
    url: `http://127.0.0.1:${options.port}`,
    async close() {
      await server.close();
      await pool.end();
    },
  };
}

// Run as its own process (the benchmark starts it so it never shares an event loop with autocannon).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runAsProcess('bare server', () =>
    startBareServer({ ...callerFromEnv(), databaseUrl: requiredEnv('DATABASE_URL'), port: Number(requiredEnv('BARE_PORT')) }),
  );
}
