import type { DaemonAuditReply } from '@interns/contracts';
import { parseFlags, requireUuidFlag } from './command-args';

export interface AuditOptions {
  internId: string;
}

/** Asks the lifecycle service for an intern's recorded daemon-access reveals and signings. */
export type DaemonAuditLookup = (internId: string) => Promise<DaemonAuditReply>;

export function parseAuditArgs(args: string[]): AuditOptions {
  const { values } = parseFlags('audit', args, { intern: { type: 'string' } });
  return { internId: requireUuidFlag('audit', 'intern', values.intern) };
}

/**
 * `audit --intern <id>`: `{"data":[{"kind","member_id","at"}...]}`, oldest first. The history outlives the
 * intern (a deleted intern is still audited); an intern without reveals or signings prints an empty list,
 * and an id that names neither an intern nor any history is an error.
 */
export async function runAudit(options: AuditOptions, lookUp: DaemonAuditLookup): Promise<DaemonAuditReply> {
  const { data } = await lookUp(options.internId);
  return { data: data.map(({ kind, member_id, at }) => ({ kind, member_id, at })) };
}
