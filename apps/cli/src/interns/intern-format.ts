import type { InternView } from '@interns/contracts';
import { type Column, type Output, shortTime } from '../output/output';

/** `provisioning 2/4 Assigning hostname`, `failed: <why>`, or the bare status. */
export function statusText(intern: Pick<InternView, 'status' | 'progress' | 'last_failure_message'>): string {
  if (intern.progress !== null) return `${intern.status} ${intern.progress.step_number}/${intern.progress.total_steps} ${intern.progress.step_label}`;
  if (intern.last_failure_message !== null && (intern.status === 'failed' || intern.status === 'destroy_failed')) {
    return `${intern.status}: ${intern.last_failure_message}`;
  }
  return intern.status;
}

export const INTERN_COLUMNS: Column<InternView>[] = [
  ['ID', (intern) => intern.id],
  ['NAME', (intern) => intern.name],
  ['STATUS', statusText],
  ['MODEL', (intern) => intern.model ?? '(default)'],
  ['CREATED', (intern) => shortTime(intern.created_at)],
];

/** One intern, a field a line. */
export function printIntern(output: Output, intern: InternView): void {
  const fields: [string, string | null][] = [
    ['id', intern.id],
    ['name', intern.name],
    ['status', statusText(intern)],
    ['model', intern.model ?? '(workspace default)'],
    ['hostname', intern.hostname],
    ['description', intern.description],
    ['instructions', intern.instructions === null ? null : firstLine(intern.instructions)],
    ['vault', intern.vault_id],
    ['attached vault', intern.attached_vault_id],
    ['created', shortTime(intern.created_at)],
    ['updated', shortTime(intern.updated_at)],
  ];
  const width = Math.max(...fields.map(([name]) => name.length));
  for (const [name, value] of fields) output.line(`${`${name}:`.padEnd(width + 2)}${value ?? '-'}`);
}

function firstLine(text: string): string {
  const [first, ...rest] = text.split('\n');
  return rest.length === 0 ? first : `${first} (+${rest.length} lines)`;
}
