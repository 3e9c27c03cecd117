import { deepStrictEqual, fail } from 'node:assert/strict';
import { DomainError, ErrorReason } from '@interns/contracts';

interface Decider<C, E, S> {
  initialState: () => S;
  evolve: (state: S, event: E) => S;
  decide: (command: C, state: S) => E[];
}

/**
 * `given(events).when(command).then(events)` / `.thenThrows(reason)`: decider specs read as the domain does.
 * Uses node:assert so it runs under any test runner and stays free of I/O. Imported through its own entry point,
 * `@interns/testing/decider-spec`: a domain lib's unit spec then loads nothing with I/O (the barrel brings pg and NATS).
 */
export function deciderSpec<C, E, S>(decider: Decider<C, E, S>) {
  return {
    given(events: E[]) {
      const state = events.reduce(decider.evolve, decider.initialState());
      return {
        when(command: C) {
          return {
            then(expected: E[]): void {
              deepStrictEqual(decider.decide(command, state), expected);
            },
            thenThrows(reason: ErrorReason): void {
              try {
                const produced = decider.decide(command, state);
                fail(`expected ${reason}, but the command produced ${JSON.stringify(produced)}`);
              } catch (error) {
                if (!(error instanceof DomainError)) throw error;
                deepStrictEqual(error.reason, reason, `expected ${reason}, got ${error.reason}: ${error.message}`);
              }
            },
          };
        },
      };
    },
  };
}
