import type { InternStatus } from '@interns/contracts';

/** The fields a caller may change on an intern (CONTRACT section 4, update). */
export interface InternChanges {
  name?: string;
  description?: string | null;
  instructions?: string | null;
  model?: string | null;
}

/** Provisioning steps of CONTRACT section 5, in order (`total_steps` 4). */
export const PROVISIONING_STEPS = [
  'Preparing workspace disk',
  'Assigning hostname',
  'Booting runtime',
  'Waiting for runtime health',
] as const;
export const PROVISIONING_TOTAL_STEPS = PROVISIONING_STEPS.length;

/** Teardown steps, in order; a failure message starts with `<step>_failed: `. */
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

/** A provisioning slot was taken: `provisioning`, step 1. */
export interface ProvisioningStarted {
  type: 'ProvisioningStarted';
  data: { attempt: number; at: string };
}

/** Step `step` (1-4) finished; after step 4 the intern is `running`. Step 2 assigns the hostname. */
export interface ProvisioningStepCompleted {
  type: 'ProvisioningStepCompleted';
  data: { attempt: number; step: number; hostname: string | null; at: string };
}

export interface ProvisioningFailed {
  type: 'ProvisioningFailed';
  data: { attempt: number; step: number; message: string; at: string };
}

export interface InternSuspended {
  type: 'InternSuspended';
  data: { at: string };
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
  | ProvisionRequested
  | ChatappInstallAwaited
  | ChatappInstallRecorded
  | ProvisioningStarted
  | ProvisioningStepCompleted
  | ProvisioningFailed
  | InternSuspended
  | DeletionRequested
  | TeardownStepCompleted
  | TeardownFailed
  | InternDestroyed;
export type InternEventType = InternEvent['type'];

export const INTERN_STREAM_TYPE = 'intern';
export const internStreamId = (internId: string): string => `intern-${internId}`;

export type { InternStatus };
