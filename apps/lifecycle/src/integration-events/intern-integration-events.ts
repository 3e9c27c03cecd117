import type { EntityManager } from 'typeorm';
import type { InternProgress } from '@interns/contracts';
import {
  type IntegrationEventDraft,
  type IntegrationEventTranslator,
  type StoredEvent,
  type StreamStep,
  StreamStates,
} from '@interns/event-store';
import { INTERN_FOLD, INTERN_STREAM_TYPE, type InternCreated, type InternState, progressOf } from '@interns/lifecycle-domain';
import { LIFECYCLE_SCHEMA } from '../migrations';

/** Interns whose latest state the relay keeps, so it folds each of their events once. */
const REMEMBERED_INTERNS = 1_000;

/** What `intern.updated` tells; instructions stay private (long, and nobody else's business). */
const PUBLISHED_FIELDS = ['name', 'description', 'model'] as const;

/**
 * What an intern event tells other services, from the intern before and after it as the decider folds them:
 * the status knowledge stays in `evolve`. Lifecycle's other streams (daemon audit) are nothing public.
 */
export function internIntegrationEvents({ event, before, after }: StreamStep<InternState>): IntegrationEventDraft[] {
  if (before.kind === 'present' && after.kind === 'gone') {
    return [{ type: 'intern.deleted', workspace_id: before.workspaceId, data: { intern_id: before.id } }];
  }
  if (after.kind !== 'present') return [];
  const workspace_id = after.workspaceId;
  const drafts: IntegrationEventDraft[] = [];
  if (event.type === 'InternCreated') {
    const created = event.data as InternCreated['data'];
    drafts.push({
      type: 'intern.created',
      workspace_id,
      data: {
        intern_id: after.id,
        organization_id: created.organizationId,
        workspace_id,
        created_by: created.createdBy,
        name: after.name,
        description: after.description,
        model: after.model,
      },
    });
  }
  const previous = before.kind === 'present' ? before : null;
  if (previous !== null && PUBLISHED_FIELDS.some((field) => previous[field] !== after[field])) {
    drafts.push({
      type: 'intern.updated',
      workspace_id,
      data: { intern_id: after.id, name: after.name, description: after.description, model: after.model },
    });
  }
  const progress = progressOf(after);
  if (previous?.status !== after.status || !sameProgress(progressOf(before), progress)) {
    drafts.push({
      type: 'intern.status_changed',
      workspace_id,
      data: { intern_id: after.id, status: after.status, previous_status: previous?.status ?? null, progress },
    });
  }
  return drafts;
}

function sameProgress(a: InternProgress | null, b: InternProgress | null): boolean {
  return a?.step_number === b?.step_number && a?.step_label === b?.step_label;
}

/** Lifecycle's translator for its IntegrationEventsRelay. */
export function internEventsTranslator(): IntegrationEventTranslator {
  const states = new StreamStates<InternState>(LIFECYCLE_SCHEMA, INTERN_FOLD, REMEMBERED_INTERNS);
  return {
    async translate(event: StoredEvent, reader: EntityManager): Promise<IntegrationEventDraft[]> {
      if (event.streamType !== INTERN_STREAM_TYPE) return [];
      return internIntegrationEvents(await states.step(reader, event));
    },
  };
}
