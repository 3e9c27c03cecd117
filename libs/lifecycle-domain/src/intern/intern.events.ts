import type { InternStatus } from '@interns/contracts';

/** The fields a caller may change on an intern (CONTRACT section 4, update). */
export interface InternChanges {
  name?: string;
  description?: string | null;
  instructions?: string | null;
  model?: string | null;
}

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

export type InternEvent = InternCreated | InternUpdated;
export type InternEventType = InternEvent['type'];

export const INTERN_STREAM_TYPE = 'intern';
export const internStreamId = (internId: string): string => `intern-${internId}`;

export type { InternStatus };
