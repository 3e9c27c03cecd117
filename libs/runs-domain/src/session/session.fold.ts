import { evolve, initialState, type SessionState } from './session.decider';
import type { SessionEvent } from './session.events';

/** A session event as a session stream records it. */
export interface RecordedSessionEvent {
  type: string;
  data: Record<string, unknown>;
}

/**
 * The decider's fold over recorded session events, for readers of the stream or of the tail (the event store's
 * `StreamStates`: the read model, the integration events): they get the session before and after each event
 * from the decider, never from rules of their own. No session event has an older shape yet.
 */
export const SESSION_FOLD = {
  initialState,
  evolve: (state: SessionState, recorded: RecordedSessionEvent): SessionState => evolve(state, recorded as unknown as SessionEvent),
};
