import type pg from 'pg';
import type { InternList, Principal } from '@interns/contracts';
import { requiredEnv } from '../shared/bench-kit';
// The very column list, row mapping and cursor codec the lifecycle list query uses, so the baselines
// do the same database and serialization work and only the layers in between differ.
import { CursorCodec } from '../../libs/contracts/src/list-cursor';
import { INTERN_COLUMNS, InternRow, toInternView } from '../../apps/lifecycle/src/interns/intern-row';

/** The first page of one workspace's interns, computed as lifecycle does, for the list benchmark's baselines. */
export interface ListPageSource {
  page(limit: number): Promise<InternList>;
}

const LIST_SQL = `SELECT ${INTERN_COLUMNS} FROM lifecycle.interns WHERE workspace_id = $1
       ORDER BY interns.created_at DESC, interns.id DESC LIMIT $2`;

export const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 500;

/** `limit` from a query string as the contract reads it; null when invalid. */
export function parseLimit(raw: unknown): number | null {
  if (raw === undefined) return DEFAULT_LIMIT;
  if (typeof raw !== 'string' || !/^\d{1,3}$/.test(raw)) return null;
  const limit = Number(raw);
  return limit >= 1 && limit <= MAX_LIMIT ? limit : null;
}

export interface BenchCaller {
  workspaceId: string;
  organizationId: string;
  /** The member the answers are computed for (`created_by_you`), as the gateway's user key would. */
  memberId: string;
}

/** Reads lifecycle's cursor secret from the database, so cursors equal the real ones. */
export async function listPageSource(pool: pg.Pool, caller: BenchCaller): Promise<ListPageSource> {
  const [setting] = (await pool.query(`SELECT value FROM lifecycle.settings WHERE name = 'cursor_secret'`)).rows;
  if (!setting) throw new Error('lifecycle.settings has no cursor_secret (has lifecycle migrated this database?)');
  const cursors = new CursorCodec(setting.value as string);
  const principal: Principal = {
    kind: 'user',
    organizationId: caller.organizationId,
    workspaceId: caller.workspaceId,
    memberId: caller.memberId,
    keyId: null,
    internId: null,
    scopes: [],
    chatappInstallRequired: false,
  };
  return {
    async page(limit) {
      const { rows } = await pool.query<InternRow>(LIST_SQL, [principal.workspaceId, limit + 1]);
      const page = rows.slice(0, limit);
      const hasMore = rows.length > limit;
      const list: InternList = { data: page.map((row) => toInternView(row, principal, true)), has_more: hasMore };
      const last = page[page.length - 1];
      if (hasMore && last) {
        list.next_cursor = cursors.encode({ createdAt: last.created_at, id: last.id, scope: last.workspace_id });
      }
      return list;
    },
  };
}

/** lifecycle's TypeORM pool size (libs/database default). */
export const POOL_SIZE = 10;

/** The caller every baseline process serves, from BARE_WORKSPACE_ID, BARE_ORGANIZATION_ID, BARE_MEMBER_ID. */
export function callerFromEnv(): BenchCaller {
  return {
    workspaceId: requiredEnv('BARE_WORKSPACE_ID'),
    organizationId: requiredEnv('BARE_ORGANIZATION_ID'),
    memberId: requiredEnv('BARE_MEMBER_ID'),
  };
}
