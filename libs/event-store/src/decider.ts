/** An event as a decider sees it: its type and data, without the store's envelope. */
export interface DomainEvent {
  type: string;
  data: Record<string, unknown>;
}

/**
 * One aggregate's pure functions (Emmett's `Decider`): the command handler rebuilds the state with
 * `initialState` and `evolve`, and asks `decide` what a command appends.
 */
export interface Decider<State, Command, Event extends DomainEvent> {
  decide(command: Command, state: State): Event[];
  evolve(state: State, event: Event): State;
  initialState(): State;
}
