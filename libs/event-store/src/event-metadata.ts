import { callerId, type RequestContext } from '@interns/contracts';
import type { EventMetadata } from './event.types';

/** Events that no client request caused directly: who they are recorded for, and what caused them. */
export interface CausedContext {
  correlationId: string;
  /** The caller the events are recorded for (`member:<id>`, `key:<id>`); null for the system itself. */
  actor: string | null;
  /** The event or command that caused these events; absent for a first cause. */
  causationId?: string | null;
}

/** A client's request (its principal is the actor), or what the system records on its own or for someone. */
export type MetadataContext = RequestContext | CausedContext;

/** The metadata every event carries, built one way for every writer. */
export function eventMetadata(context: MetadataContext): EventMetadata {
  if ('principal' in context) {
    return { correlation_id: context.correlationId, causation_id: null, actor: callerId(context.principal) };
  }
  return { correlation_id: context.correlationId, causation_id: context.causationId ?? null, actor: context.actor };
}
