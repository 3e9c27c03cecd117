import type { InternChanges, InternCreated, ProvisioningStep, TeardownStep } from './intern.events';

export interface CreateIntern {
  type: 'CreateIntern';
  data: InternCreated['data'] & {
    /** `provision: true` at create. */
    provision?: boolean;
    /** The workspace requires a chat-app install that is not recorded yet. */
    chatappInstallPending?: boolean;
  };
}

export interface UpdateIntern {
  type: 'UpdateIntern';
  data: { changes: InternChanges; at: string };
}

/** Replace the intern's egress allow list (interface section 19) with `allow`, already normalized by the contract. */
export interface ChangeEgressPolicy {
  type: 'ChangeEgressPolicy';
  data: { allow: string[]; at: string };
}

export interface RequestProvision {
  type: 'RequestProvision';
  data: { chatappInstallPending: boolean; at: string };
}

export interface RecordChatappInstall {
  type: 'RecordChatappInstall';
  data: { at: string };
}

export interface StartProvisioning {
  type: 'StartProvisioning';
  data: { at: string };
}

export interface CompleteProvisioningStep {
  type: 'CompleteProvisioningStep';
  data: { attempt: number; step: ProvisioningStep; hostname: string | null; at: string };
}

export interface FailProvisioning {
  type: 'FailProvisioning';
  data: { attempt: number; step: ProvisioningStep; message: string; at: string };
}

export interface SuspendIntern {
  type: 'SuspendIntern';
  data: { at: string };
}

export interface RecordRuntimeStopFailure {
  type: 'RecordRuntimeStopFailure';
  data: { attempt: number; message: string; at: string };
}

export interface RequestDeletion {
  type: 'RequestDeletion';
  data: { acknowledgeWorkspaceLoss: boolean; at: string };
}

export interface CompleteTeardownStep {
  type: 'CompleteTeardownStep';
  data: { step: TeardownStep; at: string };
}

export interface FailTeardown {
  type: 'FailTeardown';
  data: { step: TeardownStep; message: string; at: string };
}

export type InternCommand =
  | CreateIntern
  | UpdateIntern
  | ChangeEgressPolicy
  | RequestProvision
  | RecordChatappInstall
  | StartProvisioning
  | CompleteProvisioningStep
  | FailProvisioning
  | SuspendIntern
  | RecordRuntimeStopFailure
  | RequestDeletion
  | CompleteTeardownStep
  | FailTeardown;
