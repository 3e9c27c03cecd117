import { PROVISIONING_STEPS, type InternEventType } from './intern.events';

/**
 * Lifts the stored `data` of one event type from `fromVersion` to the next. The same shape as the event
 * store's `Upcaster`, declared here because domain code imports no I/O library.
 */
export interface InternEventUpcaster {
  type: InternEventType;
  fromVersion: number;
  upcast(data: Record<string, unknown>): Record<string, unknown>;
}

/**
 * Version 1 of the provisioning step events numbered the step (1-4); version 2 names it. Events appended
 * since the names came in are stored as version 1 too (appends take the default version), so a name passes
 * unchanged and only a number is lifted.
 */
function namedStep(data: Record<string, unknown>): Record<string, unknown> {
  const { step } = data;
  if (typeof step !== 'number') return data;
  return { ...data, step: PROVISIONING_STEPS[step - 1] ?? step };
}

/** Give these to the store that reads intern streams, and to every reader of the tail. */
export const INTERN_EVENT_UPCASTERS: readonly InternEventUpcaster[] = [
  { type: 'ProvisioningStepCompleted', fromVersion: 1, upcast: namedStep },
  { type: 'ProvisioningFailed', fromVersion: 1, upcast: namedStep },
];
