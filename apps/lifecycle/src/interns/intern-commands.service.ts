import { createHash, randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import {
  callerId,
  CreateInternReply,
  CreateInternRequest,
  DomainError,
  InternView,
  RequestContext,
  UpdateInternRequest,
} from '@interns/contracts';
import { EventMetadata, PostgresEventStore, retryOnConcurrency } from '@interns/event-store';
import {
  decide,
  INTERN_STREAM_TYPE,
  InternEvent,
  internStreamId,
  stateFrom,
} from '@interns/lifecycle-domain';
import type { ChatappInstallsService } from '../chatapp/chatapp-installs.service';
import { renderIcon } from './icon';
import { toInternView } from './intern-row';
import { toDomainEvent } from './intern-streams';
import { internRowById, notFound, visibleInternRow } from './visible-intern';

const NAME_INDEX = 'interns_name_per_creator';
const IDEMPOTENCY_PKEY = 'idempotency_keys_pkey';

/** Thrown inside the append transaction when another request with the same Idempotency-Key won. */
class IdempotencyRace extends Error {}

export class InternCommandsService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly store: PostgresEventStore,
    private readonly installs: ChatappInstallsService,
    /** Hears of every create that asked to provision (wakes this replica's process manager). */
    private readonly onProvisionRequested: () => void = () => undefined,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async create(request: CreateInternRequest): Promise<CreateInternReply> {
    const { principal } = request.context;
    // An intern key never reaches the collection; a foreign workspace is invisible.
    if (principal.kind === 'intern') throw notFound();
    if (request.body.workspace_id !== undefined && request.body.workspace_id !== principal.workspaceId) {
      throw notFound();
    }
    for (let attempt = 0; ; attempt += 1) {
      const replay = await this.findReplay(request);
      if (replay) return replay;
      try {
        return await this.createOnce(request);
      } catch (error) {
        // A concurrent request with the same key committed first (it may win on the key or, with the
        // same body, on the name): answer as its replay.
        const lostToTwin =
          error instanceof IdempotencyRace ||
          (request.idempotencyKey !== null && error instanceof DomainError && error.reason === 'name_taken');
        if (lostToTwin && attempt < 3) {
          const replay = await this.findReplay(request);
          if (replay) return replay;
          if (error instanceof IdempotencyRace) continue;
        }
        throw error;
      }
    }
  }

  async update(request: UpdateInternRequest): Promise<InternView> {
    const { principal } = request.context;
    const row = await visibleInternRow(this.dataSource, request.internId, principal);
    const streamId = internStreamId(row.id);
    await retryOnConcurrency(async () => {
      const { version, events } = await this.store.readStream(streamId);
      const produced = decide(
        { type: 'UpdateIntern', data: { changes: request.body, at: this.now().toISOString() } },
        stateFrom(events.map(toDomainEvent)),
      );
      if (produced.length === 0) return;
      await this.append(streamId, version, produced, request.context);
    });
    const updated = await visibleInternRow(this.dataSource, row.id, principal);
    return toInternView(updated, principal, false);
  }

  private async createOnce(request: CreateInternRequest): Promise<CreateInternReply> {
    const { principal } = request.context;
    const { body } = request;
    const attachedVaultId = body.vault_id ?? null;
    if (attachedVaultId !== null) await this.assertVaultAttachable(attachedVaultId, principal.workspaceId);

    const internId = randomUUID();
    const vaultId = randomUUID();
    const icon = renderIcon(internId);
    const at = this.now().toISOString();
    const provision = body.provision === true;
    const chatappInstallPending = provision && (await this.installs.installPending(principal));
    const produced = decide(
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
          attachedVaultId,
          iconSha256: icon.sha256,
          at,
          provision,
          chatappInstallPending,
        },
      },
      stateFrom([]),
    );
    await this.append(internStreamId(internId), 0, produced, request.context, async (manager) => {
      await manager.query(
        `INSERT INTO lifecycle.vaults (id, owner_intern_id, workspace_id, created_at) VALUES ($1, $2, $3, $4)`,
        [vaultId, internId, principal.workspaceId, at],
      );
      await manager.query(`INSERT INTO lifecycle.icons (intern_id, sha256, png) VALUES ($1, $2, $3)`, [
        internId,
        icon.sha256,
        icon.png,
      ]);
      if (request.idempotencyKey !== null) {
        await manager
          .query(
            `INSERT INTO lifecycle.idempotency_keys (caller, workspace_id, key, request_hash, intern_id)
             VALUES ($1, $2, $3, $4, $5)`,
            [callerId(principal), principal.workspaceId, request.idempotencyKey, requestHash(request), internId],
          )
          .catch((error: unknown) => {
            if (constraintOf(error) === IDEMPOTENCY_PKEY) throw new IdempotencyRace();
            throw error;
          });
      }
    });
    if (provision) this.onProvisionRequested();
    const row = await internRowById(this.dataSource, internId);
    if (!row) throw new Error(`intern ${internId} missing right after its creation`);
    return { replayed: false, intern: toInternView(row, principal, false) };
  }

  /** Same key and same body: the finished create again (200). Same key, another body: 409. */
  private async findReplay(request: CreateInternRequest): Promise<CreateInternReply | null> {
    if (request.idempotencyKey === null) return null;
    const { principal } = request.context;
    const rows: { request_hash: string; intern_id: string }[] = await this.dataSource.query(
      `SELECT request_hash, intern_id FROM lifecycle.idempotency_keys WHERE workspace_id = $1 AND caller = $2 AND key = $3`,
      [principal.workspaceId, callerId(principal), request.idempotencyKey],
    );
    const previous = rows[0];
    if (!previous) return null;
    if (previous.request_hash !== requestHash(request)) {
      throw new DomainError('idempotency_key_reused', 'Idempotency-Key was already used with a different body');
    }
    const row = await internRowById(this.dataSource, previous.intern_id);
    if (!row) throw notFound();
    return { replayed: true, intern: toInternView(row, principal, false) };
  }

  private async assertVaultAttachable(vaultId: string, workspaceId: string): Promise<void> {
    const rows = await this.dataSource.query(
      `SELECT 1 FROM lifecycle.interns WHERE vault_id = $1 AND workspace_id = $2 AND status NOT IN ('destroying')`,
      [vaultId, workspaceId],
    );
    if (rows.length === 0) {
      throw new DomainError('vault_not_attachable', 'vault_id is not the vault of another intern in this workspace');
    }
  }

  private async append(
    streamId: string,
    expectedVersion: number,
    events: InternEvent[],
    context: RequestContext,
    inTransaction?: (manager: EntityManager) => Promise<void>,
  ): Promise<void> {
    const metadata: EventMetadata = {
      correlation_id: context.correlationId,
      causation_id: null,
      actor: callerId(context.principal),
    };
    try {
      await this.store.appendToStream(
        streamId,
        INTERN_STREAM_TYPE,
        expectedVersion,
        events.map((event) => ({ type: event.type, data: { ...event.data }, metadata })),
        inTransaction ? { inTransaction: (manager) => inTransaction(manager) } : undefined,
      );
    } catch (error) {
      if (constraintOf(error) === NAME_INDEX) {
        throw new DomainError('name_taken', 'an intern with this name already exists');
      }
      throw error;
    }
  }
}

function requestHash(request: CreateInternRequest): string {
  return createHash('sha256').update(canonicalJson(request.body)).digest('hex');
}

/** Key order must not make two equal bodies look different. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The violated constraint of a PostgreSQL error, however TypeORM wrapped it. */
function constraintOf(error: unknown): string | undefined {
  const candidate = error as { constraint?: string; driverError?: { constraint?: string } } | null;
  return candidate?.constraint ?? candidate?.driverError?.constraint;
}
