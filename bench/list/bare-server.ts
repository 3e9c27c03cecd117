import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { requiredEnv, runAsProcess } from '../shared/bench-kit';
import { FastifyBaseline, startFastifyBaseline } from '../shared/fastify-baseline';
import { BenchCaller, callerFromEnv, listPageSource, parseLimit, POOL_SIZE } from './list-page';

/**
 * The baseline of the list benchmark: one process, one Fastify server, one pg pool (the size of
 * lifecycle's), no authentication, no NATS. It answers `GET /interns` for one fixed workspace and member
 * with the same SQL and JSON as `GET /api/v1/interns` through the gateway and lifecycle.
 */
export interface BareServerOptions extends BenchCaller {
  databaseUrl: string;
  port: number;
}

export async function startBareServer(options: BareServerOptions): Promise<FastifyBaseline> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: POOL_SIZE, application_name: 'bench-bare' });
  return startFastifyBaseline(pool, options.port, async (app) => {
    const source = await listPageSource(pool, options);
    app.get('/interns', async (request, reply) => {
      const limit = parseLimit((request.query as Record<string, unknown>).limit);
      if (limit === null) return reply.code(400).send({ error: { code: 400, message: 'bad limit' } });
      return source.page(limit);
    });
  });
}

// Run as its own process (the benchmark starts it so it never shares an event loop with autocannon).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runAsProcess('bare server', () =>
    startBareServer({ ...callerFromEnv(), databaseUrl: requiredEnv('DATABASE_URL'), port: Number(requiredEnv('BARE_PORT')) }),
  );
}
