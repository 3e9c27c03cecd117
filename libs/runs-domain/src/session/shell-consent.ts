import { DomainError, PERMISSION_OPTIONS } from '@interns/contracts';
import type { ParsedAnswer, PermissionQuestion } from '@interns/contracts';
import type { SessionState } from './session.decider';
import type { ToolConsent } from './session.events';

/** What the going run may do with a shell call before anyone is asked. */
export type ShellConsent =
  | { decision: 'run'; consent: Exclude<ToolConsent, 'caller'> }
  /** A standing `reject_always` of the session. */
  | { decision: 'refuse'; standing: true }
  | { decision: 'ask'; question: PermissionQuestion };

/** What the caller's answer to the permission question makes of the shell call. */
export type ShellAnswer =
  | { decision: 'run'; consent: 'caller' }
  | { decision: 'refuse'; standing: false }
  /** `cancel`: the caller ends the run. */
  | { decision: 'cancel' };

/**
 * The shell consent policy over the session's state: a standing answer (`allow_always` / `reject_always`,
 * kept by the decider for the rest of the session) comes first, then the run's approval mode; in `manual`
 * mode without a standing answer the caller is asked, with every permission option offered.
 */
export function shellConsent(state: SessionState, runId: string, command: string): ShellConsent {
  if (state.kind !== 'open' || state.activeRun === null || state.activeRun.runId !== runId) {
    throw new DomainError('interaction_not_pending', 'the run has ended');
  }
  if (state.standingShellPermission === 'reject') return { decision: 'refuse', standing: true };
  if (state.standingShellPermission === 'allow') return { decision: 'run', consent: 'standing' };
  if (state.activeRun.approvalMode === 'self-drive') return { decision: 'run', consent: 'self-drive' };
  return { decision: 'ask', question: { kind: 'permission', operation: `shell: ${command}`, options: [...PERMISSION_OPTIONS] } };
}

/**
 * The caller's answer to a shell permission question. A standing option also stands for later calls: the
 * decider records it when the answer is recorded, so this call needs only the option itself.
 */
export function shellAnswer(answer: ParsedAnswer): ShellAnswer {
  const option = answer.kind === 'permission' ? answer.option : null;
  if (option === 'cancel') return { decision: 'cancel' };
  if (option === 'allow_once' || option === 'allow_always') return { decision: 'run', consent: 'caller' };
  // The reject options, and anything that is not a permission option at all: the command does not run.
  return { decision: 'refuse', standing: false };
}
