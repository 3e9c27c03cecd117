import { pathToFileURL } from 'node:url';
import Fastify, { FastifyInstance } from 'fastify';
import pg from 'pg';
import type { InternList, Principal } from '@interns/contracts';
// The very column list, row mapping and cursor codec the lifecycle list query uses, so the baseline
// does the same database and serialization work and only the layers in between differ.
import { CursorCodec } from '../../libs/contracts/src/list-cursor';
import { INTERN_COLUMNS, InternRow, toInternView } from '../../apps/lifecycle/src/interns/intern-row';

/**
 * The baseline of the list benchmark: one process, one Fastify server, one pg pool (the size of
 * lifecycle's), no authentication, no NATS. It answers `GET /interns` for one fixed workspace and member
 * with the same SQL and JSON as `GET /api/v1/interns` through the gateway and lifecycle.
 */
export interface BareServerOptions {
  databaseUrl: string;
  workspaceId: string;
  organizationId: string;
  /** The member the answers are computed for (`created_by_you`), as the gateway's user key would. */
  memberId: string;
  port: number;
}

export interface BareServer {
  url: string;
  close(): Promise<void>;
}

/** lifecycle's TypeORM pool size (libs/database default). */
const POOL_SIZE = 10;
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;

const LIST_SQL = `SELECT ${INTERN_COLUMNS} FROM lifecycle.interns WHERE workspace_id = $1
       ORDER BY created_at DESC, id DESC LIMIT $2`;

function parseLimit(raw: unknown): number | null {
  if (raw === undefined) return DEFAULT_LIMIT;
  if (typeof raw !== 'string' || !/^\d{1,3}$/.test(raw)) return null;
  const limit = Number(raw);
  return limit >= 1 && limit <= MAX_LIMIT ? limit : null;
}

export async function startBareServer(options: BareServerOptions): Promise<BareServer> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: POOL_SIZE, application_name: 'bench-bare' });
  let app: FastifyInstance | null = null;
  try {
    const [setting] = (await pool.query(`SELECT value FROM lifecycle.settings WHERE name = 'cursor_secret'`)).rows;
    if (!setting) throw new Error('lifecycle.settings has no cursor_secret (has lifecycle migrated this database?)');
    const cursors = new CursorCodec(setting.value as string);
    const principal: Principal = {
      kind: 'user',
      organizationId: options.organizationId,
      workspaceId: options.workspaceId,
      memberId: options.memberId,
      keyId: null,
      internId: null,
      scopes: [],
      chatappInstallRequired: false,
    };

    app = Fastify({ logger: false });
    app.get('/health/ready', async () => ({ status: 'ok' }));
    app.get('/interns', async (request, reply) => {
      const limit = parseLimit((request.query as Record<string, unknown>).limit);
      if (limit === null) return reply.code(400).send({ error: { code: 400, message: 'bad limit' } });
      const { rows } = await pool.query<InternRow>(LIST_SQL, [principal.workspaceId, limit + 1]);
      const page = rows.slice(0, limit);
      const hasMore = rows.length > limit;
      const list: InternList = { data: page.map((row) => toInternView(row, principal, true)), has_more: hasMore };
      const last = page[page.length - 1];
      if (hasMore && last) {
        list.next_cursor = cursors.encode({
          createdAt: last.created_at.toISOString(),
          id: last.id,
          scope: last.workspace_id,
        });
      }
      return list;
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

function requiredEnv(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
}

/** Run as its own process (the benchmark starts it so it never shares an event loop with autocannon). */
async function main(): Promise<void> {
  const server = await startBareServer({
    databaseUrl: requiredEnv('DATABASE_URL'),
    workspaceId: requiredEnv('BARE_WORKSPACE_ID'),
    organizationId: requiredEnv('BARE_ORGANIZATION_ID'),
    memberId: requiredEnv('BARE_MEMBER_ID'),
    port: Number(requiredEnv('BARE_PORT')),
  });
  const shutdown = () => {
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    console.error(`bare server failed: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
