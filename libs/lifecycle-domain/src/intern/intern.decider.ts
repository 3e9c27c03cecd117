import { DomainError, InternStatus } from '@interns/contracts';
import type { InternCommand } from './intern.commands';
import type { InternChanges, InternEvent } from './intern.events';

export interface InternAbsent {
  kind: 'absent';
}

export interface InternPresent {
  kind: 'present';
  id: string;
  workspaceId: string;
  status: InternStatus;
  name: string;
  description: string | null;
  instructions: string | null;
  model: string | null;
}

export type InternState = InternAbsent | InternPresent;

export function initialState(): InternState {
  return { kind: 'absent' };
}

export function evolve(state: InternState, event: InternEvent): InternState {
  switch (event.type) {
    case 'InternCreated':
      return {
        kind: 'present',
        id: event.data.internId,
        workspaceId: event.data.workspaceId,
        status: 'stopped',
        name: event.data.name,
        description: event.data.description,
        instructions: event.data.instructions,
        model: event.data.model,
      };
    case 'InternUpdated':
      if (state.kind === 'absent') return state;
      return { ...state, ...event.data.changes };
    default:
      return assertNever(event);
  }
}

/** Statuses in which the intern's configuration may not change (CONTRACT section 5). */
const FROZEN_FOR_UPDATE: ReadonlySet<InternStatus> = new Set(['destroying', 'destroy_failed']);

export function decide(command: InternCommand, state: InternState): InternEvent[] {
  switch (command.type) {
    case 'CreateIntern':
      if (state.kind === 'present') throw new DomainError('intern_busy', 'intern already exists');
      return [{ type: 'InternCreated', data: command.data }];
    case 'UpdateIntern': {
      if (state.kind === 'absent') throw new DomainError('not_found', 'intern not found');
      if (FROZEN_FOR_UPDATE.has(state.status)) {
        throw new DomainError('intern_busy', `intern is ${state.status}`);
      }
      const changes = effectiveChanges(state, command.data.changes);
      if (Object.keys(changes).length === 0) return [];
      return [{ type: 'InternUpdated', data: { changes, at: command.data.at } }];
    }
    default:
      return assertNever(command);
  }
}

/** Only the fields that really change: an update that changes nothing records nothing. */
function effectiveChanges(state: InternPresent, requested: InternChanges): InternChanges {
  const changes: InternChanges = {};
  if (requested.name !== undefined && requested.name !== state.name) changes.name = requested.name;
  if (requested.description !== undefined && requested.description !== state.description) {
    changes.description = requested.description;
  }
  if (requested.instructions !== undefined && requested.instructions !== state.instructions) {
    changes.instructions = requested.instructions;
  }
  if (requested.model !== undefined && requested.model !== state.model) changes.model = requested.model;
  return changes;
}

export function stateFrom(events: InternEvent[]): InternState {
  return events.reduce(evolve, initialState());
}

function assertNever(value: never): never {
  throw new Error(`unhandled: ${JSON.stringify(value)}`);
}
