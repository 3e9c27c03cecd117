import { Logger } from '@nestjs/common';
import type { InternState } from '@interns/lifecycle-domain';

const logger = new Logger('Interns');

/** An intern's status for the log: `none` before it was created, `deleted` once its teardown finished. */
function statusOf(state: InternState): string {
  switch (state.kind) {
    case 'absent':
      return 'none';
    case 'gone':
      return 'deleted';
    case 'present':
      return state.status;
    default: {
      const unknown: never = state;
      throw new Error(`unknown intern state ${JSON.stringify(unknown)}`);
    }
  }
}

/**
 * One `info` line per committed status change (`intern <id> stopped -> queued`), whoever caused it: a request (its
 * correlation id) or the process manager's steps (the correlation id of the request they carry on).
 */
export function logInternTransition(internId: string, previous: InternState, next: InternState, correlationId: string | undefined): void {
  const from = statusOf(previous);
  const to = statusOf(next);
  if (from === to) return;
  logger.log(`intern ${internId} ${from} -> ${to}`, { intern_id: internId, from, to, correlation_id: correlationId });
}
