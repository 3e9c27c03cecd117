import { DomainError, InternProgress, InternStatus } from '@interns/contracts';
import type { InternCommand } from './intern.commands';
import {
  ARCHIVE_STEP,
  InternChanges,
  InternEvent,
  PROVISIONING_STEP_LABELS,
  PROVISIONING_STEPS,
  PROVISIONING_TOTAL_STEPS,
  ProvisioningStep,
  TEARDOWN_STEPS,
  TeardownStep,
} from './intern.events';

export interface InternAbsent {
  kind: 'absent';
}

/** Torn down: 404 everywhere. */
export interface InternGone {
  kind: 'gone';
}

export interface InternPresent {
  kind: 'present';
  id: string;
  workspaceId: string;
  status: InternStatus;
  name: string;
  description: string | null;
  instructions: string | null;
  model: string | null;
  hostname: string | null;
  lastFailureMessage: string | null;
  /** The egress allow list (interface section 19), as last changed; empty until then. */
  egressAllow: string[];
  /** Number of the latest provisioning run (0: never provisioned). */
  attempt: number;
  /** The provisioning step in progress while `provisioning`, else null. */
  provisioningStep: ProvisioningStep | null;
  /** Set from the first delete on: which teardown steps are done, and whether the archive is skipped. */
  teardown: { skipArchive: boolean; done: TeardownStep[] } | null;
}

export type InternState = InternAbsent | InternGone | InternPresent;

export function initialState(): InternState {
  return { kind: 'absent' };
}

export function evolve(state: InternState, event: InternEvent): InternState {
  if (event.type === 'InternCreated') {
    const d = event.data;
    return {
      kind: 'present',
      id: d.internId,
      workspaceId: d.workspaceId,
      status: 'stopped',
      name: d.name,
      description: d.description,
      instructions: d.instructions,
      model: d.model,
      hostname: null,
      lastFailureMessage: null,
      egressAllow: [],
      attempt: 0,
      provisioningStep: null,
      teardown: null,
    };
  }
  if (state.kind !== 'present') return state;
  switch (event.type) {
    case 'InternUpdated':
      return { ...state, ...event.data.changes };
    case 'EgressPolicyChanged':
      return { ...state, egressAllow: event.data.allow };
    case 'ProvisionRequested':
      return { ...state, status: 'queued', attempt: event.data.attempt, lastFailureMessage: null, provisioningStep: null };
    case 'ChatappInstallAwaited':
      return { ...state, status: 'awaiting_chatapp_install' };
    case 'ChatappInstallRecorded':
      return { ...state, status: 'queued' };
    case 'ProvisioningStarted':
      return { ...state, status: 'provisioning', provisioningStep: PROVISIONING_STEPS[0] };
    case 'ProvisioningStepCompleted': {
      const hostname = event.data.hostname ?? state.hostname;
      const next = provisioningStepAfter(event.data.step);
      if (next === null) return { ...state, status: 'running', provisioningStep: null, hostname };
      return { ...state, provisioningStep: next, hostname };
    }
    case 'ProvisioningFailed':
      return { ...state, status: 'failed', provisioningStep: null, lastFailureMessage: event.data.message };
    case 'InternSuspended':
      return { ...state, status: 'stopped', provisioningStep: null };
    case 'RuntimeStopFailed':
      return { ...state, lastFailureMessage: runtimeStopFailureMessage(event.data.message) };
    case 'DeletionRequested':
      return {
        ...state,
        status: 'destroying',
        provisioningStep: null,
        lastFailureMessage: null,
        teardown: { skipArchive: event.data.skipArchive, done: state.teardown?.done ?? [] },
      };
    case 'TeardownStepCompleted':
      return state.teardown
        ? { ...state, teardown: { ...state.teardown, done: [...state.teardown.done, event.data.step] } }
        : state;
    case 'TeardownFailed':
      return { ...state, status: 'destroy_failed', lastFailureMessage: teardownFailureMessage(event.data) };
    case 'InternDestroyed':
      return { kind: 'gone' };
    default:
      return assertNever(event);
  }
}

/** `<step>_failed: <why>`, e.g. `workspace_archive_failed: disk full`. */
export function teardownFailureMessage(failure: { step: TeardownStep; message: string }): string {
  return `${failure.step}_failed: ${failure.message}`;
}

/** A runtime stop given up on is named like the teardown step that stops runtimes: `runtime_stop_failed: <why>`. */
export function runtimeStopFailureMessage(message: string): string {
  return teardownFailureMessage({ step: 'runtime_stop', message });
}
export const RUNTIME_STOP_FAILURE_PREFIX = runtimeStopFailureMessage('');

/** The teardown step to run next, or null when none is left (or no teardown is under way). */
export function nextTeardownStep(state: InternState): TeardownStep | null {
  if (state.kind !== 'present' || state.teardown === null) return null;
  const { skipArchive, done } = state.teardown;
  return TEARDOWN_STEPS.find((step) => !done.includes(step) && !(skipArchive && step === ARCHIVE_STEP)) ?? null;
}

/** The provisioning step that follows `step`, or null after the last one. */
export function provisioningStepAfter(step: ProvisioningStep): ProvisioningStep | null {
  return PROVISIONING_STEPS[PROVISIONING_STEPS.indexOf(step) + 1] ?? null;
}

/** The step before `step`, or null for the first one. */
export function provisioningStepBefore(step: ProvisioningStep): ProvisioningStep | null {
  return PROVISIONING_STEPS[PROVISIONING_STEPS.indexOf(step) - 1] ?? null;
}

/** The `progress` object of the Intern resource. */
export function progressOf(state: InternState): InternProgress | null {
  if (state.kind !== 'present' || state.status !== 'provisioning' || state.provisioningStep === null) return null;
  return {
    step_label: PROVISIONING_STEP_LABELS[state.provisioningStep],
    step_number: PROVISIONING_STEPS.indexOf(state.provisioningStep) + 1,
    total_steps: PROVISIONING_TOTAL_STEPS,
  };
}

const PROVISION_IDEMPOTENT: ReadonlySet<InternStatus> = new Set(['queued', 'provisioning', 'awaiting_chatapp_install']);
const SUSPENDABLE: ReadonlySet<InternStatus> = new Set(['running', 'queued', 'provisioning', 'awaiting_chatapp_install']);
/** Statuses whose booted runtime the process manager stops (CONTRACT section 5 has no runtime in them). */
export const RUNTIME_STOPPABLE: ReadonlySet<InternStatus> = new Set(['stopped', 'failed']);
const TEARING_DOWN: ReadonlySet<InternStatus> = new Set(['destroying', 'destroy_failed']);

export function decide(command: InternCommand, state: InternState): InternEvent[] {
  if (command.type === 'CreateIntern') {
    if (state.kind !== 'absent') throw new DomainError('intern_busy', 'intern already exists');
    const { provision, chatappInstallPending, ...data } = command.data;
    const created: InternEvent = { type: 'InternCreated', data };
    return provision ? [created, ...provisionEvents(1, chatappInstallPending ?? false, data.at)] : [created];
  }
  if (state.kind !== 'present') throw new DomainError('not_found', 'intern not found');

  switch (command.type) {
    case 'UpdateIntern': {
      if (TEARING_DOWN.has(state.status)) throw busy(state);
      const changes = effectiveChanges(state, command.data.changes);
      if (Object.keys(changes).length === 0) return [];
      return [{ type: 'InternUpdated', data: { changes, at: command.data.at } }];
    }
    case 'ChangeEgressPolicy': {
      // As an update: any status but a teardown's, which is about to take the intern and its policy away.
      if (TEARING_DOWN.has(state.status)) throw busy(state);
      // The same list again records nothing (the caller still gets its 200), like an update that changes nothing.
      if (sameList(state.egressAllow, command.data.allow)) return [];
      return [{ type: 'EgressPolicyChanged', data: command.data }];
    }
    case 'RequestProvision':
      if (PROVISION_IDEMPOTENT.has(state.status)) return [];
      if (state.status === 'running' || TEARING_DOWN.has(state.status)) throw busy(state);
      return provisionEvents(state.attempt + 1, command.data.chatappInstallPending, command.data.at);
    case 'RecordChatappInstall':
      return state.status === 'awaiting_chatapp_install'
        ? [{ type: 'ChatappInstallRecorded', data: { at: command.data.at } }]
        : [];
    case 'StartProvisioning':
      return state.status === 'queued'
        ? [{ type: 'ProvisioningStarted', data: { attempt: state.attempt, at: command.data.at } }]
        : [];
    case 'CompleteProvisioningStep':
      // Answers of an older run, or of a step already recorded, change nothing.
      if (!isCurrentStep(state, command.data.attempt, command.data.step)) return [];
      return [{ type: 'ProvisioningStepCompleted', data: command.data }];
    case 'FailProvisioning':
      if (!isCurrentStep(state, command.data.attempt, command.data.step)) return [];
      return [{ type: 'ProvisioningFailed', data: command.data }];
    case 'SuspendIntern':
      if (TEARING_DOWN.has(state.status)) throw busy(state);
      return SUSPENDABLE.has(state.status) ? [{ type: 'InternSuspended', data: { at: command.data.at } }] : [];
    case 'RecordRuntimeStopFailure':
      // The intern moved on meanwhile (a provision or a delete): that path deals with its runtime.
      return RUNTIME_STOPPABLE.has(state.status) ? [{ type: 'RuntimeStopFailed', data: command.data }] : [];
    case 'RequestDeletion': {
      if (state.status === 'destroying') return [];
      const archiveFailed =
        state.status === 'destroy_failed' && (state.lastFailureMessage ?? '').startsWith(`${ARCHIVE_STEP}_failed`);
      if (archiveFailed && !command.data.acknowledgeWorkspaceLoss) {
        throw new DomainError(
          'workspace_loss_not_acknowledged',
          'archiving the workspace failed; delete again with acknowledge_workspace_loss: true to delete without an archive',
        );
      }
      const skipArchive = (state.teardown?.skipArchive ?? false) || archiveFailed;
      return [{ type: 'DeletionRequested', data: { skipArchive, at: command.data.at } }];
    }
    case 'CompleteTeardownStep': {
      if (state.status !== 'destroying' || nextTeardownStep(state) !== command.data.step) return [];
      const completed: InternEvent = { type: 'TeardownStepCompleted', data: command.data };
      const after = evolve(state, completed);
      return nextTeardownStep(after) === null
        ? [completed, { type: 'InternDestroyed', data: { at: command.data.at } }]
        : [completed];
    }
    case 'FailTeardown':
      if (state.status !== 'destroying' || nextTeardownStep(state) !== command.data.step) return [];
      return [{ type: 'TeardownFailed', data: command.data }];
    default:
      return assertNever(command);
  }
}

function provisionEvents(attempt: number, chatappInstallPending: boolean, at: string): InternEvent[] {
  const requested: InternEvent = { type: 'ProvisionRequested', data: { attempt, at } };
  return chatappInstallPending ? [requested, { type: 'ChatappInstallAwaited', data: { at } }] : [requested];
}

function isCurrentStep(state: InternPresent, attempt: number, step: ProvisioningStep): boolean {
  return state.status === 'provisioning' && state.attempt === attempt && state.provisioningStep === step;
}

function busy(state: InternPresent): DomainError {
  return new DomainError('intern_busy', `intern is ${state.status}`);
}

/** Only the fields that really change: an update that changes nothing records nothing. */
function effectiveChanges(state: InternPresent, requested: InternChanges): InternChanges {
  const changes: InternChanges = {};
  if (requested.name !== undefined && requested.name !== state.name) changes.name = requested.name;
  if (requested.description !== undefined && requested.description !== state.description) {
    changes.description = requested.description;
  }
  if (requested.instructions !== undefined && requested.instructions !== state.instructions) {
    changes.instructions = requested.instructions;
  }
  if (requested.model !== undefined && requested.model !== state.model) changes.model = requested.model;
  return changes;
}

/** Same entries in the same order: the order is the caller's and is answered back as given. */
function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((entry, index) => entry === b[index]);
}

export function stateFrom(events: InternEvent[]): InternState {
  return events.reduce(evolve, initialState());
}

/** The intern decider as one object, for the command handler. */
export const internDecider = { decide, evolve, initialState };

function assertNever(value: never): never {
  throw new Error(`unhandled: ${JSON.stringify(value)}`);
}
