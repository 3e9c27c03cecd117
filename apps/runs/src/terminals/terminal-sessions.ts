import type { DataSource } from 'typeorm';
import { DomainError } from '@interns/contracts';

export interface TerminalSessionRow {
  id: string;
  intern_id: string;
  member_id: string;
}

/**
 * The open terminals of every replica (`runs.terminal_sessions`): a row from just before a terminal starts until it
 * closed. A replica that died leaves its rows; they are found by asking their terminals (nobody answers) when they
 * would matter: at the cap, and when suspend or delete closes an intern's terminals.
 */
export class TerminalSessions {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Adds the terminal unless its intern already has `cap`, across replicas (under a per-intern advisory lock, so two
   * replicas cannot both take the last place). At the cap, the rows whose terminal nobody holds go first; they are
   * returned, so their detach can be recorded.
   */
  async reserve(row: TerminalSessionRow, cap: number, held: (terminalId: string) => Promise<boolean>): Promise<TerminalSessionRow[]> {
    return this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`runs:terminals:${row.intern_id}`]);
      const rows: TerminalSessionRow[] = await manager.query('SELECT id, intern_id, member_id FROM runs.terminal_sessions WHERE intern_id = $1', [row.intern_id]);
      let orphans: TerminalSessionRow[] = [];
      if (rows.length >= cap) {
        const answers = await Promise.all(rows.map(async (candidate) => ({ candidate, held: await held(candidate.id) })));
        orphans = answers.filter((answer) => !answer.held).map((answer) => answer.candidate);
        if (orphans.length > 0) await manager.query('DELETE FROM runs.terminal_sessions WHERE id = ANY($1::uuid[])', [orphans.map((orphan) => orphan.id)]);
        if (rows.length - orphans.length >= cap) {
          throw new DomainError('limit_reached', `the intern already has ${cap} terminals attached (TERMINALS_PER_INTERN)`);
        }
      }
      await manager.query('INSERT INTO runs.terminal_sessions (id, intern_id, member_id) VALUES ($1, $2, $3)', [row.id, row.intern_id, row.member_id]);
      return orphans;
    });
  }

  /** True when this call removed the row (so exactly one closer records the detach). */
  async release(terminalId: string): Promise<boolean> {
    const rows: unknown[] = await this.dataSource.query('DELETE FROM runs.terminal_sessions WHERE id = $1 RETURNING id', [terminalId]);
    return rows.length > 0;
  }

  ofIntern(internId: string): Promise<TerminalSessionRow[]> {
    return this.dataSource.query('SELECT id, intern_id, member_id FROM runs.terminal_sessions WHERE intern_id = $1', [internId]);
  }
}
