import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import {
  CreateInternReply,
  CreateInternRequest,
  DomainError,
  EgressPolicy,
  InternView,
  PutEgressPolicyRequest,
  UpdateInternRequest,
} from '@interns/contracts';
import { isUniqueViolation } from '@interns/database';
import { eventMetadata } from '@interns/event-store';
import type { InternCommand } from '@interns/lifecycle-domain';
import type { ChatappInstallsService } from './chatapp-installs.service';
import { renderIcon } from './icon';
import { type IdempotencyClaim, idempotencyClaim, IdempotencyKeys } from './idempotency-keys';
import { type InternRow, toInternView } from './intern-row';
import type { InternStreams } from './intern-streams';
import { internRowById, notFound, visibleInternRow } from './visible-intern';

const NAME_INDEX = 'interns_name_per_creator';

export interface InternCommandsOptions {
  /** MAX_INTERNS_PER_WORKSPACE. */
  maxInternsPerWorkspace: number;
  now?: () => Date;
}

/**
 * Create (once per Idempotency-Key) and update, both answering with the intern as just projected, and the
 * replacement of an intern's egress policy.
 */
export class InternCommandsService {
  private readonly idempotencyKeys: IdempotencyKeys;
  private readonly now: () => Date;

  constructor(
    private readonly dataSource: DataSource,
    private readonly streams: InternStreams,
    private readonly installs: ChatappInstallsService,
    private readonly options: InternCommandsOptions,
  ) {
    this.idempotencyKeys = new IdempotencyKeys(dataSource);
    this.now = options.now ?? (() => new Date());
  }

  async create(request: CreateInternRequest): Promise<CreateInternReply> {
    const { principal } = request.context;
    // An intern key never reaches the collection; a foreign workspace is invisible.
    if (principal.kind === 'intern') throw notFound();
    if (request.body.workspace_id !== undefined && request.body.workspace_id !== principal.workspaceId) {
      throw notFound();
    }
    const claim = idempotencyClaim(request);
    return this.idempotencyKeys.once(claim, {
      create: () => this.createOnce(request, claim),
      replay: async (internId) => {
        const row = await internRowById(this.dataSource, internId);
        if (!row) throw notFound();
        return { replayed: true, intern: toInternView(row, principal, false) };
      },
      // With the same body, a twin that committed first wins on the name.
      lostToTwin: (error) => error instanceof DomainError && error.reason === 'name_taken',
    });
  }

  async update(request: UpdateInternRequest): Promise<InternView> {
    const { principal } = request.context;
    const row = await visibleInternRow(this.dataSource, request.internId, principal);
    await this.streams
      .execute(
        row.id,
        () => ({ type: 'UpdateIntern', data: { changes: request.body, at: this.now().toISOString() } }),
        eventMetadata(request.context),
      )
      .catch(nameTaken);
    const updated = await visibleInternRow(this.dataSource, row.id, principal);
    return toInternView(updated, principal, false);
  }

  /**
   * Replaces the egress allow list (interface section 19) of a visible intern. Never for an intern key: an intern
   * must not widen what its own requests may reach (the gateway refuses it before the body; this holds for any caller).
   * The same list again appends nothing and answers the same.
   */
  async putEgressPolicy(request: PutEgressPolicyRequest): Promise<EgressPolicy> {
    const { principal } = request.context;
    if (principal.kind === 'intern') throw new DomainError('forbidden', 'an intern key cannot change an egress policy');
    const row = await visibleInternRow(this.dataSource, request.internId, principal);
    const { allow } = request.body;
    await this.streams.execute(
      row.id,
      () => ({ type: 'ChangeEgressPolicy', data: { allow, at: this.now().toISOString() } }),
      eventMetadata(request.context),
    );
    // What the intern now holds: the decider appended exactly this list, or found it held already.
    return { allow };
  }

  private async createOnce(request: CreateInternRequest, claim: IdempotencyClaim | null): Promise<CreateInternReply> {
    const { principal } = request.context;
    const { body } = request;
    const attachedVaultId = body.vault_id ?? null;
    if (attachedVaultId !== null) await this.assertVaultAttachable(attachedVaultId, principal.workspaceId);

    const internId = randomUUID();
    const vaultId = randomUUID();
    const icon = await renderIcon(internId);
    const at = this.now().toISOString();
    const provision = body.provision === true;
    const chatappInstallPending = provision && (await this.installs.installPending(principal));
    const command: InternCommand = {
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
    };
    let created: InternRow | null = null;
    await this.streams
      .executeOnNew(internId, command, eventMetadata(request.context), {
        inTransaction: async (manager) => {
          await this.assertWorkspaceHasRoom(manager, principal.workspaceId);
          await manager.query(
            `INSERT INTO lifecycle.vaults (id, owner_intern_id, workspace_id, created_at) VALUES ($1, $2, $3, $4)`,
            [vaultId, internId, principal.workspaceId, at],
          );
          await manager.query(`INSERT INTO lifecycle.icons (intern_id, sha256, png) VALUES ($1, $2, $3)`, [
            internId,
            icon.sha256,
            icon.png,
          ]);
          if (claim !== null) await this.idempotencyKeys.remember(manager, claim, internId);
          // Read in the append's transaction: once it commits, the process manager may start step 1 before
          // a later read, and the reply must show the intern as created (queued, not provisioning).
          created = await internRowById(manager, internId);
        },
      })
      .catch(nameTaken);
    if (created === null) throw new Error(`intern ${internId} missing right after its creation`);
    return { replayed: false, intern: toInternView(created, principal, false) };
  }

  /**
   * MAX_INTERNS_PER_WORKSPACE, counted in the create's transaction after its own row was projected. Creates of
   * one workspace take turns on an advisory lock, so two at the cap cannot both see room (each counting
   * statement sees what committed before it).
   */
  private async assertWorkspaceHasRoom(manager: EntityManager, workspaceId: string): Promise<void> {
    await manager.query(`SELECT pg_advisory_xact_lock(hashtextextended('interns-per-workspace:' || $1, 0))`, [workspaceId]);
    const rows: { n: number }[] = await manager.query(`SELECT count(*)::int AS n FROM lifecycle.interns WHERE workspace_id = $1`, [
      workspaceId,
    ]);
    const { maxInternsPerWorkspace } = this.options;
    if ((rows[0]?.n ?? 0) > maxInternsPerWorkspace) {
      throw new DomainError(
        'limit_reached',
        `this workspace already holds ${maxInternsPerWorkspace} interns (MAX_INTERNS_PER_WORKSPACE); delete one first`,
      );
    }
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
}

/** The read model's unique name index refused the append: the name is another intern's. */
function nameTaken(error: unknown): never {
  if (isUniqueViolation(error, NAME_INDEX)) throw new DomainError('name_taken', 'an intern with this name already exists');
  throw error;
}
