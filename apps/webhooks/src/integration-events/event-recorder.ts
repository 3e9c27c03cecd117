import type { DataSource, EntityManager } from 'typeorm';
import { INTEGRATION_EVENT_TYPES, isIntegrationEventType, isWebhookEventType, webhookPayloadOf, type WebhookEventType } from '@interns/contracts';
import type { QuestionPayloadPurger } from '../retention/question-payload-purger';
import type { ReceivedEvent } from './received-event';

/**
 * What became of an event. Acknowledged: `recorded` (deliveries inserted), `no_endpoint` (a webhook type no
 * endpoint of its workspace subscribes to), `duplicate` (seen before), `ignored` (not a webhook type; only its
 * intern's workspace may have been noted). Not acknowledged, offered again later: `unroutable` (a run event
 * whose intern's workspace is not known yet) and `unreadable` (a newer version of the type than this build reads).
 */
export type RecordOutcome =
  | { settled: true; outcome: 'recorded'; deliveries: number }
  | { settled: true; outcome: 'no_endpoint' | 'duplicate' | 'ignored' }
  | { settled: false; outcome: 'unroutable' | 'unreadable'; reason: string };

/**
 * The event's id recorded as processed and its deliveries inserted, one per endpoint of the workspace subscribed to
 * its type, as one statement: both or neither. `fresh` is 0 for an event seen before (nothing is inserted).
 */
const RECORD_DELIVERIES = `
  WITH fresh AS (
    INSERT INTO webhooks.processed_events (event_id) VALUES ($1) ON CONFLICT (event_id) DO NOTHING RETURNING event_id
  ), delivered AS (
    INSERT INTO webhooks.deliveries (endpoint_id, event_id, event_type, payload)
    SELECT e.id, f.event_id, $2, $3 FROM webhooks.endpoints e, fresh f WHERE e.workspace_id = $4 AND $2 = ANY (e.events)
    ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING endpoint_id
  )
  SELECT (SELECT count(*) FROM fresh)::int AS fresh, (SELECT count(*) FROM delivered)::int AS delivered`;

/**
 * Turns integration events into deliveries: one per endpoint of the event's workspace subscribed to its type.
 * The event id is recorded as processed with the deliveries, in one statement (the consumer acknowledges only after
 * it commits), so an event is never lost and a redelivery adds nothing.
 *
 * The workspace: lifecycle's events carry it; runs' do not (`workspace_id: null`), so every lifecycle event
 * about an intern notes the intern's workspace in `webhooks.intern_workspaces` (interns never change
 * workspace), and a run event is routed by its `intern_id` through that map. An event that notes a workspace or
 * purges an intern's questions does that in one transaction with its deliveries; the others (every run event: two
 * per chat turn) are the one statement, and a lookup of their workspace, with no transaction of their own.
 */
export class EventRecorder {
  constructor(
    private readonly dataSource: DataSource,
    private readonly questions: QuestionPayloadPurger,
  ) {}

  async record(event: ReceivedEvent): Promise<RecordOutcome> {
    if (!isIntegrationEventType(event.type)) return { settled: true, outcome: 'ignored' };
    const internId = typeof event.data.intern_id === 'string' ? event.data.intern_id : null;
    const known = INTEGRATION_EVENT_TYPES[event.type];
    const webhookType = isWebhookEventType(event.type) ? event.type : null;
    if (webhookType !== null && event.version > known.version) {
      return { settled: false, outcome: 'unreadable', reason: `version ${event.version}, this replica reads ${known.version}` };
    }
    const notesWorkspace = known.source === 'lifecycle' && internId !== null && event.workspace_id !== null;
    // A deleted intern's transcripts are purged (CONTRACT section 22): so are the questions its deliveries quote.
    const purgesIntern = event.type === 'intern.deleted' && internId !== null;
    if (!notesWorkspace && !purgesIntern) {
      return webhookType === null ? { settled: true, outcome: 'ignored' } : this.deliver(this.dataSource.manager, event, webhookType, internId);
    }
    return this.dataSource.transaction(async (manager) => {
      if (notesWorkspace) {
        await manager.query(
          'INSERT INTO webhooks.intern_workspaces (intern_id, workspace_id) VALUES ($1, $2) ON CONFLICT (intern_id) DO NOTHING',
          [internId, event.workspace_id],
        );
      }
      if (purgesIntern) await this.questions.purgeIntern(manager, internId);
      if (webhookType === null) return { settled: true, outcome: 'ignored' };
      return this.deliver(manager, event, webhookType, internId);
    });
  }

  /** The event's deliveries (RECORD_DELIVERIES), routed by its workspace, or by its intern's when it carries none. */
  private async deliver(manager: EntityManager, event: ReceivedEvent, webhookType: WebhookEventType, internId: string | null): Promise<RecordOutcome> {
    const workspaceId = event.workspace_id ?? (internId === null ? null : await workspaceOf(manager, internId));
    if (workspaceId === null) return { settled: false, outcome: 'unroutable', reason: `the workspace of intern ${internId} is not known yet` };
    const payload = JSON.stringify(webhookPayloadOf({ ...event, type: webhookType }, workspaceId));
    const [recorded]: { fresh: number; delivered: number }[] = await manager.query(RECORD_DELIVERIES, [event.id, webhookType, payload, workspaceId]);
    if (recorded.fresh === 0) return { settled: true, outcome: 'duplicate' };
    return recorded.delivered === 0 ? { settled: true, outcome: 'no_endpoint' } : { settled: true, outcome: 'recorded', deliveries: recorded.delivered };
  }
}

async function workspaceOf(manager: EntityManager, internId: string): Promise<string | null> {
  const rows: { workspace_id: string }[] = await manager.query('SELECT workspace_id FROM webhooks.intern_workspaces WHERE intern_id = $1', [internId]);
  return rows[0]?.workspace_id ?? null;
}
