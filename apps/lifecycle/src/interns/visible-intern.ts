import type { DataSource, EntityManager } from 'typeorm';
import { DomainError, internVisibleTo, isUuid, Principal } from '@interns/contracts';
import { INTERN_COLUMNS, InternRow } from './intern-row';

export function notFound(): DomainError {
  return new DomainError('not_found', 'intern not found');
}

/** `db` may be a transaction's manager: the row as that transaction sees it. */
export async function internRowById(db: DataSource | EntityManager, internId: string): Promise<InternRow | null> {
  const rows: InternRow[] = await db.query(`SELECT ${INTERN_COLUMNS} FROM lifecycle.interns WHERE id = $1`, [
    internId,
  ]);
  return rows[0] ?? null;
}

/**
 * The intern as the principal may see it (CONTRACT section 1, check 7): a non-uuid id, another workspace,
 * another intern than an intern key's, or a torn-down intern are all 404 `not_found`.
 */
export async function visibleInternRow(dataSource: DataSource, internId: string, principal: Principal): Promise<InternRow> {
  if (!isUuid(internId)) throw notFound();
  const row = await internRowById(dataSource, internId);
  if (!row || !internVisibleTo(row, principal)) throw notFound();
  return row;
}
