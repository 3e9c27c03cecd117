/**
 * `interns ls --watch`: after the table, one line per change as the events route tells it (status changes with
 * their step, runs ending, questions opening), until Ctrl-C. Under `--json` each event is printed as it came.
 */
import type { InternView } from '@interns/contracts';
import type { ApiClient } from '../http/api-client';
import type { Output } from '../output/output';
import { followWorkspaceEvents, type WorkspaceEvent } from './workspace-events';

export async function watchInterns(client: ApiClient, output: Output, known: InternView[]): Promise<void> {
  const names = new Map(known.map((intern) => [intern.id, intern.name]));
  const stop = new AbortController();
  const onInterrupt = () => stop.abort();
  process.once('SIGINT', onInterrupt);
  if (!output.json) output.note('watching for changes (Ctrl-C to stop)');
  try {
    await followWorkspaceEvents(client, {
      signal: stop.signal,
      onEvent: async (event) => {
        if (output.json) return output.jsonLine(event);
        const internId = typeof event.data.intern_id === 'string' ? event.data.intern_id : null;
        if (internId !== null && !names.has(internId)) names.set(internId, await nameOf(client, internId));
        output.line(describeEvent(event, internId === null ? '-' : (names.get(internId) ?? internId)));
      },
      onReconnect: (why, delayMs) => output.note(`events: ${why}; reconnecting in ${Math.round(delayMs / 1000)} s`),
    });
  } finally {
    process.removeListener('SIGINT', onInterrupt);
  }
}

/** A line for people: `12:00:01  ada  provisioning 2/4 Assigning hostname (was queued)`. */
export function describeEvent(event: WorkspaceEvent, internName: string): string {
  const time = (event.created_at || new Date().toISOString()).slice(11, 19);
  const data = event.data;
  switch (event.type) {
    case 'intern.status_changed': {
      const progress = data.progress as { step_number: number; total_steps: number; step_label: string } | null | undefined;
      const step = progress ? ` ${progress.step_number}/${progress.total_steps} ${progress.step_label}` : '';
      const previous = typeof data.previous_status === 'string' ? ` (was ${data.previous_status})` : '';
      return `${time}  ${internName}  ${String(data.status)}${step}${previous}`;
    }
    case 'run.completed':
    case 'run.failed':
      return `${time}  ${internName}  run ${String(data.run_id)} ${event.type === 'run.completed' ? 'completed' : 'failed'} (${String(data.finish_reason)})`;
    case 'question.opened':
      return `${time}  ${internName}  run ${String(data.run_id)} asks: ${questionText(data.arguments)}`;
    default:
      return `${time}  ${internName}  ${event.type}`;
  }
}

function questionText(args: unknown): string {
  const question = args as { kind?: string; operation?: string; message?: string } | null;
  if (question?.kind === 'permission') return `permission for ${question.operation ?? '?'}`;
  return question?.message ?? 'a question';
}

async function nameOf(client: ApiClient, id: string): Promise<string> {
  try {
    return (await client.get<InternView>(`/interns/${id}`)).name;
  } catch {
    // Deleted meanwhile, or not visible: the id says which it was.
    return id;
  }
}
