import { deepStrictEqual } from 'node:assert/strict';

/** A workflow as the run's is written (run-workflow.ts): what it does on an input, and what it has done after each output. */
interface Workflow<I, O, S> {
  initialState: () => S;
  evolve: (state: S, output: O) => S;
  decide: (input: I, state: S) => O[];
}

/**
 * `given(outputs).when(input).then(outputs)` / `.thenNothingHappened()`, as Emmett's workflow specification reads:
 * the state is what the workflow did so far (its outputs, evolved from its initial state), the outputs expected
 * are compared in order. Uses node:assert and loads nothing with I/O, so a workflow's spec starts no process,
 * timer or connection.
 */
export function workflowSpec<I, O, S>(workflow: Workflow<I, O, S>) {
  return {
    given(done: O[]) {
      const state = done.reduce(workflow.evolve, workflow.initialState());
      return {
        when(input: I) {
          return {
            then(expected: O[]): void {
              deepStrictEqual(workflow.decide(input, state), expected);
            },
            thenNothingHappened(): void {
              deepStrictEqual(workflow.decide(input, state), []);
            },
          };
        },
      };
    },
  };
}
