import type { InternStatus } from '@interns/contracts';

/** The fields a caller may change on an intern (CONTRACT section 4, update). */
export interface InternChanges {
  name?: string;
  description?: string | null;
  instructions?: string | null;
  model?: string | null;
}

/**
 * Provisioning and teardown steps are named alike, `<object>_<action>`, in order. The teardown names are part
 * of the HTTP contract (a failure message starts with `<step>_failed: `); the provisioning steps are shown by
 * number and label (`progress`, CONTRACT section 5, `total_steps` 4).
 */
export const PROVISIONING_STEPS = ['disk_prepare', 'hostname_assign', 'runtime_boot', 'health_await'] as const;
export type ProvisioningStep = (typeof PROVISIONING_STEPS)[number];
export const PROVISIONING_TOTAL_STEPS = PROVISIONING_STEPS.length;

/** `progress.step_label` of each provisioning step (CONTRACT section 5). */
export const PROVISIONING_STEP_LABELS: Readonly<Record<ProvisioningStep, string>> = {
  disk_prepare: 'Preparing workspace disk',
  hostname_assign: 'Assigning hostname',
  runtime_boot: 'Booting runtime',
  health_await: 'Waiting for runtime health',
};

export const TEARDOWN_STEPS = ['runs_end', 'runtime_stop', 'workspace_archive', 'vault_remove', 'disk_remove'] as const;
export type TeardownStep = (typeof TEARDOWN_STEPS)[number];
export const ARCHIVE_STEP: TeardownStep = 'workspace_archive';

export interface InternCreated {
  type: 'InternCreated';
  data: {
    internId: string;
    organizationId: string;
    workspaceId: string;
    /** Member who created it; null for organization keys (creator-less interns). */
    createdBy: string | null;
    name: string;
    description: string | null;
    instructions: string | null;
    model: string | null;
    vaultId: string;
    attachedVaultId: string | null;
    iconSha256: string;
    at: string;
  };
}

export interface InternUpdated {
  type: 'InternUpdated';
  data: { changes: InternChanges; at: string };
}

/**
 * The intern's egress allow list (interface section 19) is now `allow`, whole: normalized entries (hostnames and
 * `*.<domain>`), in the caller's order. Before the first one the list is empty.
 */
export interface EgressPolicyChanged {
  type: 'EgressPolicyChanged';
  data: { allow: string[]; at: string };
}

/** Status `queued`; `attempt` numbers provisioning runs so late answers of an old run are ignored. */
export interface ProvisionRequested {
  type: 'ProvisionRequested';
  data: { attempt: number; at: string };
}

/** Status `awaiting_chatapp_install`. */
export interface ChatappInstallAwaited {
  type: 'ChatappInstallAwaited';
  data: { at: string };
}

/** Back to `queued`. */
export interface ChatappInstallRecorded {
  type: 'ChatappInstallRecorded';
  data: { at: string };
}

/** A provisioning slot was taken: `provisioning`, at the first step. */
export interface ProvisioningStarted {
  type: 'ProvisioningStarted';
  data: { attempt: number; at: string };
}

/**
 * `step` finished; after the last one the intern is `running`. `hostname_assign` records the hostname.
 * Schema version 2: version 1 numbered the steps 1-4 (see INTERN_EVENT_UPCASTERS).
 */
export interface ProvisioningStepCompleted {
  type: 'ProvisioningStepCompleted';
  data: { attempt: number; step: ProvisioningStep; hostname: string | null; at: string };
}

/** Schema version 2, as ProvisioningStepCompleted. */
export interface ProvisioningFailed {
  type: 'ProvisioningFailed';
  data: { attempt: number; step: ProvisioningStep; message: string; at: string };
}

export interface InternSuspended {
  type: 'InternSuspended';
  data: { at: string };
}

/**
 * The process manager gave up stopping the runtime of a `stopped` or `failed` intern after `attempt` refusals
 * of the driver: the status stays, `last_failure_message` says why (`runtime_stop_failed: <message>`). A later
 * provision boots the runtime again; a delete stops it in its teardown.
 */
export interface RuntimeStopFailed {
  type: 'RuntimeStopFailed';
  data: { attempt: number; message: string; at: string };
}

/** Status `destroying`. `skipArchive` when the caller acknowledged losing the workspace. */
export interface DeletionRequested {
  type: 'DeletionRequested';
  data: { skipArchive: boolean; at: string };
}

export interface TeardownStepCompleted {
  type: 'TeardownStepCompleted';
  data: { step: TeardownStep; at: string };
}

export interface TeardownFailed {
  type: 'TeardownFailed';
  data: { step: TeardownStep; message: string; at: string };
}

/** Teardown done: the intern is gone (404 everywhere, absent from lists). */
export interface InternDestroyed {
  type: 'InternDestroyed';
  data: { at: string };
}

export type InternEvent =
  | InternCreated
  | InternUpdated
  | EgressPolicyChanged
  | ProvisionRequested
  | ChatappInstallAwaited
  | ChatappInstallRecorded
  | ProvisioningStarted
  | ProvisioningStepCompleted
  | ProvisioningFailed
  | InternSuspended
  | RuntimeStopFailed
  | DeletionRequested
  | TeardownStepCompleted
  | TeardownFailed
  | InternDestroyed;
export type InternEventType = InternEvent['type'];

export const INTERN_STREAM_TYPE = 'intern';
export const internStreamId = (internId: string): string => `intern-${internId}`;

export type { InternStatus };
