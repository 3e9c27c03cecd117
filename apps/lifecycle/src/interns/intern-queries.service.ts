import type { DataSource } from 'typeorm';
import { PreparedReads } from '@interns/database';
import {
  CursorCodec,
  DomainError,
  EgressPolicy,
  GetEgressPolicyRequest,
  GetInternRequest,
  InternIconReply,
  InternIconRequest,
  InternList,
  InternOwnerReply,
  InternOwnerRequest,
  internVisibleTo,
  InternView,
  isUuid,
  ListInternsRequest,
} from '@interns/contracts';
import { INTERN_COLUMNS, InternRow, toInternView } from './intern-row';
import { notFound, visibleInternRow } from './visible-intern';

const GET_INTERN_SQL = `SELECT ${INTERN_COLUMNS} FROM lifecycle.interns WHERE id = $1`;

/**
 * The list's four statement shapes (with or without the status filter and the cursor), named and written once:
 * pg compares a prepared statement's text on every call, and building it per request cost a string each time.
 * ORDER BY names the table's columns: a bare `created_at` would be the formatted text column of INTERN_COLUMNS
 * (no index).
 */
const LIST_STATEMENTS = {
  all_first: listStatement('all_first', false, false),
  all_after: listStatement('all_after', false, true),
  status_first: listStatement('status_first', true, false),
  status_after: listStatement('status_after', true, true),
} as const;

function listStatement(shape: string, byStatus: boolean, afterCursor: boolean): { name: string; text: string } {
  const conditions = ['workspace_id = $1'];
  let parameter = 1;
  if (byStatus) conditions.push(`status = ANY($${(parameter += 1)}::text[])`);
  if (afterCursor) conditions.push(`(created_at, id) < ($${(parameter += 1)}::timestamptz, $${(parameter += 1)}::uuid)`);
  return {
    name: `lifecycle_list_interns_${shape}`,
    text: `SELECT ${INTERN_COLUMNS} FROM lifecycle.interns WHERE ${conditions.join(' AND ')}
       ORDER BY interns.created_at DESC, interns.id DESC LIMIT $${parameter + 1}`,
  };
}

/** Get and list are the hot reads: prepared statements, served on the lean NATS path (interns.lean-handlers.ts). */
export class InternQueriesService {
  private readonly reads: PreparedReads;

  constructor(
    private readonly dataSource: DataSource,
    private readonly cursors: CursorCodec,
  ) {
    this.reads = new PreparedReads(dataSource);
  }

  async get(request: GetInternRequest): Promise<InternView> {
    const { principal } = request.context;
    if (!isUuid(request.internId)) throw notFound();
    const rows = await this.reads.rows<InternRow>('lifecycle_get_intern', GET_INTERN_SQL, [request.internId]);
    const row = rows[0];
    if (!row || !internVisibleTo(row, principal)) throw notFound();
    return toInternView(row, principal, true);
  }

  /** The identicon made at create; visible exactly when the intern is. */
  async icon(request: InternIconRequest): Promise<InternIconReply> {
    const row = await visibleInternRow(this.dataSource, request.internId, request.context.principal);
    const icons: { sha256: string; png: Buffer }[] = await this.dataSource.query(
      `SELECT sha256, png FROM lifecycle.icons WHERE intern_id = $1`,
      [row.id],
    );
    const icon = icons[0];
    if (!icon) throw notFound();
    return { sha256: icon.sha256, pngBase64: icon.png.toString('base64') };
  }

  /** The egress allow list (interface section 19) of an intern the principal may see; any credential that sees it. */
  async egressPolicy(request: GetEgressPolicyRequest): Promise<EgressPolicy> {
    if (!isUuid(request.internId)) throw notFound();
    const rows: (Pick<InternRow, 'id' | 'workspace_id'> & { egress_allow: string[] })[] = await this.dataSource.query(
      `SELECT id, workspace_id, egress_allow FROM lifecycle.interns WHERE id = $1`,
      [request.internId],
    );
    const row = rows[0];
    if (!row || !internVisibleTo(row, request.context.principal)) throw notFound();
    return { allow: row.egress_allow };
  }

  /** Newest first; one query of limit + 1 rows tells whether another page follows. */
  async list(request: ListInternsRequest): Promise<InternList> {
    const { principal } = request.context;
    if (principal.kind === 'intern') throw notFound();
    if (request.workspaceId !== null && request.workspaceId !== principal.workspaceId) throw notFound();

    const values: unknown[] = [principal.workspaceId];
    if (request.statuses !== null) values.push(request.statuses);
    if (request.startingAfter !== null) {
      const position = this.cursors.decode(request.startingAfter);
      if (position.scope !== principal.workspaceId) {
        throw new DomainError('invalid_body', 'starting_after is not a valid cursor');
      }
      values.push(position.createdAt, position.id);
    }
    values.push(request.limit + 1);
    const statement = LIST_STATEMENTS[`${request.statuses === null ? 'all' : 'status'}_${request.startingAfter === null ? 'first' : 'after'}`];
    const rows = await this.reads.rows<InternRow>(statement.name, statement.text, values);
    const page = rows.slice(0, request.limit);
    const hasMore = rows.length > request.limit;
    const list: InternList = { data: page.map((row) => toInternView(row, principal, true)), has_more: hasMore };
    const last = page[page.length - 1];
    if (hasMore && last) {
      list.next_cursor = this.cursors.encode({
        createdAt: last.created_at,
        id: last.id,
        scope: last.workspace_id,
      });
    }
    return list;
  }

  /** For operators (admin intern-key): where an intern lives. */
  async owner(request: InternOwnerRequest): Promise<InternOwnerReply> {
    if (!isUuid(request.internId)) throw notFound();
    const rows: { organization_id: string; workspace_id: string }[] = await this.dataSource.query(
      `SELECT organization_id, workspace_id FROM lifecycle.interns WHERE id = $1`,
      [request.internId],
    );
    const row = rows[0];
    if (!row) throw notFound();
    return { internId: request.internId, organizationId: row.organization_id, workspaceId: row.workspace_id };
  }
}
