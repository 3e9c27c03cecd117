import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { EntityManager } from 'typeorm';
import { DomainError, ERROR_REASONS, parseCreateInternBody, type Principal } from '@interns/contracts';
// What lifecycle's create runs, taken from lifecycle itself wherever it is exported: the decider that makes the
// InternCreated event, the event's storable JSON and metadata, the icon, the read-model projection, the row
// read and the reply mapping. Only the append's statement is spelled out here (it is private to
// PostgresEventStore); it is its SQL for a batch of one event.
import { eventMetadata } from '../../libs/event-store/src/event-metadata';
import { DEFAULT_MAX_EVENT_BYTES, storableEventData } from '../../libs/event-store/src/event-size';
import { eventStoreTables } from '../../libs/event-store/src/event-store.sql';
import type { StoredEvent } from '../../libs/event-store/src/event.types';
import { toStorableJson } from '../../libs/event-store/src/storable-json';
import { isUniqueViolation } from '../../libs/database/src/pg-errors';
import { internDecider } from '../../libs/lifecycle-domain/src/intern/intern.decider';
import { INTERN_STREAM_TYPE, internStreamId } from '../../libs/lifecycle-domain/src/intern/intern.events';
import { projectDaemonTokenRevocation } from '../../apps/lifecycle/src/daemon/daemon-token-revocation.projection';
import { renderIcon } from '../../apps/lifecycle/src/interns/icon';
import { projectInternSummary } from '../../apps/lifecycle/src/interns/intern-summary.projection';
import { toInternView } from '../../apps/lifecycle/src/interns/intern-row';
import { internRowById } from '../../apps/lifecycle/src/interns/visible-intern';
import { requiredEnv, runAsProcess } from '../shared/bench-kit';
import { FastifyBaseline, startFastifyBaseline } from '../shared/fastify-baseline';

/**
 * The baseline of the create benchmark: one process, one Fastify server, one pg pool (the size of
 * lifecycle's), no authentication, no NATS, no TypeORM. `POST /interns` creates an intern in one fixed
 * workspace for one member with the same statements, in one transaction, as `POST /api/v1/interns` through
 * the gateway and lifecycle, and answers 201 with the same InternView.
 */
export interface BareServerOptions {
  databaseUrl: string;
  workspaceId: string;
  organizationId: string;
  /** The member the interns are created by, as the gateway's user key would. */
  memberId: string;
  port: number;
}

/** lifecycle's TypeORM pool size and statement timeout (libs/database, config defaults). */
const POOL_SIZE = 10;
const STATEMENT_TIMEOUT_MS = 5000;
const NAME_INDEX = 'interns_name_per_creator';
/**
 * The one value that differs from lifecycle's rows: `streams.stream_type` of the baseline's interns. lifecycle's
 * integration events relay tails the same events table; its translator publishes `intern` streams only, so it
 * reads past these events instead of publishing `intern.created` for them (and analytics and webhooks never
 * hear of them). Otherwise the system's background work for the baseline's creates would run on the same cores
 * during the baseline's runs. The projections are handed the events as the intern events they are.
 */
const BARE_STREAM_TYPE = 'bench-bare-intern';

const tables = eventStoreTables('lifecycle');
/** PostgresEventStore's append of one event to a new stream: the version claim and the insert in one statement. */
const APPEND_SQL = `WITH claim AS (INSERT INTO ${tables.streams} (stream_id, stream_type, version) VALUES ($1, $3, $2::int)
               ON CONFLICT (stream_id) DO NOTHING RETURNING 1)
         INSERT INTO ${tables.events}
           (stream_id, stream_version, event_id, type, schema_version, data, metadata)
         SELECT $1::text, v.stream_version, v.event_id, v.type, v.schema_version, v.data, v.metadata
           FROM claim, (VALUES ($4::int, $5::uuid, $6::text, $7::int, $8::jsonb, $9::jsonb)) AS v (stream_version, event_id, type, schema_version, data, metadata)
         RETURNING global_position::text AS global_position, transaction_id::text AS transaction_id,
                   stream_version, created_at`;
const VAULT_SQL = `INSERT INTO lifecycle.vaults (id, owner_intern_id, workspace_id, created_at) VALUES ($1, $2, $3, $4)`;
const ICON_SQL = `INSERT INTO lifecycle.icons (intern_id, sha256, png) VALUES ($1, $2, $3)`;

interface AppendedRow {
  global_position: string;
  transaction_id: string;
  stream_version: number;
  created_at: Date;
}

/** lifecycle's projections and row read only call `query`; here it runs on the request's pg client. */
function managerOf(client: pg.PoolClient): EntityManager {
  const manager = { query: async (sql: string, params?: unknown[]) => (await client.query(sql, params)).rows };
  return manager as unknown as EntityManager;
}

function errorBody(status: number, message: string) {
  return { error: { code: status, message } };
}

export async function startBareServer(options: BareServerOptions): Promise<FastifyBaseline> {
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: POOL_SIZE,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    application_name: 'bench-bare',
  });
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

  /** InternCommandsService.createOnce for a body without vault_id or provision, without its layers. */
  async function createIntern(rawBody: unknown) {
    const body = parseCreateInternBody(rawBody);
    const internId = randomUUID();
    const vaultId = randomUUID();
    const icon = await renderIcon(internId);
    const at = new Date().toISOString();
    const [created] = internDecider.decide(
      {
        type: 'CreateIntern',
        data: {
          internId,
          organizationId: principal.organizationId,
          workspaceId: principal.workspaceId,
          createdBy: principal.memberId,
          name: body.name,
          description: body.description ?? null,
          instructions: body.instructions ?? null,
          model: body.model ?? null,
          vaultId,
          attachedVaultId: null,
          iconSha256: icon.sha256,
          at,
          provision: false,
          chatappInstallPending: false,
        },
      },
      internDecider.initialState(),
    );
    if (created === undefined) throw new Error('the decider made no event for CreateIntern');
    const streamId = internStreamId(internId);
    const eventId = randomUUID();
    const metadataJson = toStorableJson(eventMetadata({ correlationId: randomUUID(), principal }));
    const dataJson = storableEventData(created.type, { ...created.data }, metadataJson, DEFAULT_MAX_EVENT_BYTES);

    const client = await pool.connect();
    try {
      await client.query('START TRANSACTION');
      const { rows } = await client.query<AppendedRow>(APPEND_SQL, [
        streamId, 1, BARE_STREAM_TYPE, 1, eventId, created.type, 1, dataJson, metadataJson,
      ]);
      const appended = rows[0];
      if (appended === undefined) throw new Error(`stream ${streamId} already exists`);
      const stored: StoredEvent = {
        globalPosition: appended.global_position,
        transactionId: appended.transaction_id,
        streamId,
        streamType: INTERN_STREAM_TYPE,
        streamVersion: appended.stream_version,
        eventId,
        type: created.type,
        schemaVersion: 1,
        data: JSON.parse(dataJson),
        metadata: JSON.parse(metadataJson),
        createdAt: appended.created_at,
      };
      const manager = managerOf(client);
      await projectInternSummary(manager, [stored]);
      await projectDaemonTokenRevocation(manager, [stored]);
      await client.query(VAULT_SQL, [vaultId, internId, principal.workspaceId, at]);
      await client.query(ICON_SQL, [internId, icon.sha256, icon.png]);
      const row = await internRowById(manager, internId);
      await client.query('COMMIT');
      if (row === null) throw new Error(`intern ${internId} missing right after its creation`);
      return toInternView(row, principal, false);
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  return startFastifyBaseline(pool, options.port, (app) => {
    app.post('/interns', async (request, reply) => {
      try {
        const intern = await createIntern(request.body);
        return reply.code(201).send(intern);
      } catch (error) {
        if (error instanceof DomainError) {
          const { status } = ERROR_REASONS[error.reason];
          return reply.code(status).send(errorBody(status, error.message));
        }
        if (isUniqueViolation(error, NAME_INDEX)) {
          return reply.code(409).send(errorBody(409, 'an intern with this name already exists'));
        }
        process.stderr.write(`bare create failed: ${error instanceof Error ? error.message : String(error)}\n`);
        return reply.code(500).send(errorBody(500, 'internal error'));
      }
    });
  });
}

// Run as its own process (the benchmark starts it so it never shares an event loop with autocannon).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runAsProcess('bare server', () =>
    startBareServer({
      databaseUrl: requiredEnv('DATABASE_URL'),
      workspaceId: requiredEnv('BARE_WORKSPACE_ID'),
      organizationId: requiredEnv('BARE_ORGANIZATION_ID'),
      memberId: requiredEnv('BARE_MEMBER_ID'),
      port: Number(requiredEnv('BARE_PORT')),
    }),
  );
}
