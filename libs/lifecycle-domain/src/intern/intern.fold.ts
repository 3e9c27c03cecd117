import { evolve, initialState, type InternState } from './intern.decider';
import type { InternEvent } from './intern.events';
import { INTERN_EVENT_UPCASTERS } from './intern.upcasters';

/** An intern event as an intern stream records it. */
export interface RecordedInternEvent {
  type: string;
  data: Record<string, unknown>;
}

/**
 * The decider's fold over recorded intern events, for readers of the stream or of the tail (the event store's
 * `StreamStates`): they get the intern before and after each event from the decider, never from rules of
 * their own. Recorded events are the decider's own, upcast to their current shape.
 */
export const INTERN_FOLD = {
  initialState,
  evolve: (state: InternState, recorded: RecordedInternEvent): InternState => evolve(state, recorded as InternEvent),
  upcasters: INTERN_EVENT_UPCASTERS,
};
