import type { InTransaction } from '@interns/event-store';
import {
  type CompleteProvisioningStep,
  type CompleteTeardownStep,
  type FailProvisioning,
  type FailTeardown,
  type InternPresent,
  type InternState,
  nextTeardownStep,
  type ProvisioningStep,
  type RecordRuntimeStopFailure,
  RUNTIME_STOPPABLE,
  type TeardownStep,
} from '@interns/lifecycle-domain';
import type { ProvisioningStepOutcome } from './provisioning-step.runner';
import type { RuntimeStopOutcome } from './runtime-stop.runner';
import type { TeardownStepOutcome } from './teardown-step.runner';

/** What just happened to one intern's task: its stream was loaded, or the driver call it asked for answered. */
export type ProvisioningFact =
  /** The intern as its stream stands, and whether the read model says its runtime may be up. */
  | { kind: 'loaded'; intern: InternState; runtimeActive: boolean }
  | { kind: 'provisioning_step_ran'; attempt: number; step: ProvisioningStep; outcome: ProvisioningStepOutcome; at: string }
  | { kind: 'teardown_step_ran'; step: TeardownStep; outcome: TeardownStepOutcome; at: string }
  /** `revision`: the stream version the stop was decided on. */
  | { kind: 'runtime_stop_ran'; outcome: RuntimeStopOutcome; revision: number; at: string };

/** What the process manager does next for that intern; the task ends after `nothing`, `check_again` and a record. */
export type ProvisioningAction =
  | { kind: 'nothing' }
  | { kind: 'run_provisioning_step'; intern: InternPresent; attempt: number; step: ProvisioningStep }
  | { kind: 'run_teardown_step'; internId: string; step: TeardownStep }
  | { kind: 'stop_runtime'; internId: string }
  /** The runtime is not healthy yet: no record, the intern's next task no sooner than `afterMs`. */
  | { kind: 'check_again'; afterMs: number }
  | {
      kind: 'record_provisioning_step';
      command: CompleteProvisioningStep | FailProvisioning;
      attempt: number;
      step: ProvisioningStep;
      outcome: 'done' | 'failed';
    }
  /** `inTransaction`: the step's local side effect, committed with its completion. */
  | { kind: 'record_teardown_step'; command: CompleteTeardownStep | FailTeardown; inTransaction?: InTransaction }
  /** Only if the intern did not change since `revision` (a new provision keeps the runtime flag set). */
  | { kind: 'clear_runtime_active'; revision: number }
  | { kind: 'record_runtime_stop_failure'; command: RecordRuntimeStopFailure; warning: string };

/**
 * The provisioning process manager's decisions, without I/O (ProvisioningProcessManager performs them): from a
 * loaded intern, which step to run; from a step's outcome, what to record. Nothing but the event log says which
 * step is next, so a task decided on a fresh load resumes where the log stands after any crash.
 */
export function nextProvisioningAction(fact: ProvisioningFact): ProvisioningAction {
  switch (fact.kind) {
    case 'loaded':
      return workOf(fact.intern, fact.runtimeActive);
    case 'provisioning_step_ran': {
      const { attempt, step, outcome, at } = fact;
      if (outcome.kind === 'again') return { kind: 'check_again', afterMs: outcome.afterMs };
      const command: CompleteProvisioningStep | FailProvisioning =
        outcome.kind === 'done'
          ? { type: 'CompleteProvisioningStep', data: { attempt, step, hostname: outcome.hostname, at } }
          : { type: 'FailProvisioning', data: { attempt, step, message: outcome.message, at } };
      return { kind: 'record_provisioning_step', command, attempt, step, outcome: outcome.kind };
    }
    case 'teardown_step_ran': {
      const { step, outcome, at } = fact;
      if (outcome.kind === 'failed') {
        return { kind: 'record_teardown_step', command: { type: 'FailTeardown', data: { step, message: outcome.message, at } } };
      }
      const done = { kind: 'record_teardown_step', command: { type: 'CompleteTeardownStep', data: { step, at } } } as const;
      return outcome.inTransaction ? { ...done, inTransaction: outcome.inTransaction } : done;
    }
    case 'runtime_stop_ran': {
      const { outcome, at } = fact;
      if (outcome.kind === 'stopped') return { kind: 'clear_runtime_active', revision: fact.revision };
      const { attempt, message } = outcome;
      return {
        kind: 'record_runtime_stop_failure',
        command: { type: 'RecordRuntimeStopFailure', data: { attempt, message, at } },
        warning: `gave up stopping its runtime after ${attempt} refusals: ${message}`,
      };
    }
    default:
      return assertNever(fact);
  }
}

/** Provisioning and teardown go step by step; a stopped or failed intern's booted runtime is stopped. */
function workOf(intern: InternState, runtimeActive: boolean): ProvisioningAction {
  if (intern.kind !== 'present') return { kind: 'nothing' };
  if (intern.status === 'provisioning') {
    const step = intern.provisioningStep;
    return step === null ? { kind: 'nothing' } : { kind: 'run_provisioning_step', intern, attempt: intern.attempt, step };
  }
  if (intern.status === 'destroying') {
    const step = nextTeardownStep(intern);
    return step === null ? { kind: 'nothing' } : { kind: 'run_teardown_step', internId: intern.id, step };
  }
  if (runtimeActive && RUNTIME_STOPPABLE.has(intern.status)) return { kind: 'stop_runtime', internId: intern.id };
  return { kind: 'nothing' };
}

function assertNever(value: never): never {
  throw new Error(`unknown provisioning fact ${JSON.stringify(value)}`);
}
