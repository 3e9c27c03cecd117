import Fastify, { type FastifyInstance } from 'fastify';
import type pg from 'pg';

/**
 * The server of a Fastify + pg baseline process (list's, create's). Apart from bench-kit so that processes
 * which do not serve with Fastify never load it.
 */
export interface FastifyBaseline {
  url: string;
  /** Closes the server, then the pool. */
  close(): Promise<void>;
}

/**
 * Listens on 127.0.0.1:`port` with `/health/ready` and the routes `addRoutes` adds (it may read what they need
 * from `pool` first). When it cannot start, the server and the pool are closed before the error is thrown.
 */
export async function startFastifyBaseline(
  pool: pg.Pool,
  port: number,
  addRoutes: (app: FastifyInstance) => void | Promise<void>,
): Promise<FastifyBaseline> {
  let app: FastifyInstance | null = null;
  try {
    app = Fastify({ logger: false });
    app.get('/health/ready', async () => ({ status: 'ok' }));
    await addRoutes(app);
    await app.listen({ host: '127.0.0.1', port });
  } catch (error) {
    await app?.close();
    await pool.end();
    throw error;
  }
  const server = app;
  return {
    url: `http://127.0.0.1:${port}`,
    async close() {
      await server.close();
      await pool.end();
    },
  };
}
