import type { DataSource, EntityManager } from 'typeorm';
import { DaemonAuditEntry, DaemonAuditKind, DaemonAuditReply, DomainError, isUuid, TerminalAuditRequest } from '@interns/contracts';
import { CommandHandler, type Decider, eventMetadata, PostgresEventStore, type MetadataContext } from '@interns/event-store';
import { internRowById, notFound } from '../interns/visible-intern';

export const DAEMON_AUDIT_STREAM_TYPE = 'daemon-audit';
export const daemonAuditStreamId = (internId: string): string => `daemon-audit-${internId}`;

/** Event type per audit kind; relayed to JetStream like every lifecycle event. */
export const DAEMON_AUDIT_EVENT_TYPES: Record<DaemonAuditKind, string> = {
  daemon_access: 'DaemonAccessRevealed',
  signing: 'InvokeRequestSigned',
  terminal_attached: 'TerminalAttached',
  terminal_detached: 'TerminalDetached',
};
const TERMINAL_KINDS: readonly DaemonAuditKind[] = ['terminal_attached', 'terminal_detached'];
const KIND_OF_TYPE = new Map(Object.entries(DAEMON_AUDIT_EVENT_TYPES).map(([kind, type]) => [type, kind as DaemonAuditKind]));

export interface DaemonAuditRecord {
  kind: DaemonAuditKind;
  internId: string;
  memberId: string;
  /** ISO 8601 UTC with milliseconds. */
  at: string;
}

type DaemonAuditEvent = { type: string; data: { internId: string; memberId: string; at: string } };

/** An audit decides nothing on its past: every record is one event, so appending never reads the stream's events. */
const daemonAuditDecider: Decider<null, DaemonAuditRecord, DaemonAuditEvent> = {
  initialState: () => null,
  evolve: (state) => state,
  decide: (record) => [
    { type: DAEMON_AUDIT_EVENT_TYPES[record.kind], data: { internId: record.internId, memberId: record.memberId, at: record.at } },
  ],
};

/**
 * Reveals, signings and terminals attached and detached, one stream per intern (`daemon-audit-<intern_id>`) in
 * lifecycle's event store. The stream outlives its intern: an operator can still audit a deleted intern.
 */
export class DaemonAuditLog {
  private readonly handler: CommandHandler<null, DaemonAuditRecord, DaemonAuditEvent>;

  constructor(
    private readonly dataSource: DataSource,
    /** A store without the intern projections: these events are not intern events. */
    private readonly store: PostgresEventStore,
  ) {
    this.handler = new CommandHandler(store, { decider: daemonAuditDecider, streamType: DAEMON_AUDIT_STREAM_TYPE });
  }

  /** Appends the record; `inTransaction` commits (or fails) together with it. */
  async record(
    record: DaemonAuditRecord,
    context: MetadataContext,
    inTransaction?: (manager: EntityManager) => Promise<void>,
  ): Promise<void> {
    // At the stream's head, read alone: reading every past reveal just to append one more would grow without bound.
    await this.handler.handleAtHead(daemonAuditStreamId(record.internId), record, {
      metadata: eventMetadata(context),
      inTransaction,
    });
  }

  /** A terminal's attach or detach, as the runs replica holding it reports it (recorded for the token's member). */
  async recordTerminal(request: TerminalAuditRequest): Promise<{ recorded: true }> {
    if (!TERMINAL_KINDS.includes(request.kind)) throw new DomainError('invalid_body', 'kind must be terminal_attached or terminal_detached');
    if (typeof request.internId !== 'string' || !isUuid(request.internId)) throw new DomainError('invalid_body', 'internId must be a uuid');
    if (typeof request.memberId !== 'string' || request.memberId === '') throw new DomainError('invalid_body', 'memberId is required');
    const at = new Date(request.at);
    if (typeof request.at !== 'string' || Number.isNaN(at.getTime())) throw new DomainError('invalid_body', 'at must be a timestamp');
    await this.record(
      { kind: request.kind, internId: request.internId.toLowerCase(), memberId: request.memberId, at: at.toISOString() },
      { correlationId: request.correlationId, actor: `member:${request.memberId}` },
    );
    return { recorded: true };
  }

  /**
   * For operators (admin `audit`), oldest first. An intern that exists but was never revealed or signed for
   * answers an empty list; an id that names neither a current intern nor any recorded history is not_found
   * (most likely a mistyped id).
   */
  async report(internId: string): Promise<DaemonAuditReply> {
    if (!isUuid(internId)) throw notFound();
    const id = internId.toLowerCase();
    const entries = await this.list(id);
    if (entries !== null) return { data: entries };
    if ((await internRowById(this.dataSource, id)) === null) throw notFound();
    return { data: [] };
  }

  /** Oldest first; null when the intern has no audit stream at all. */
  async list(internId: string): Promise<DaemonAuditEntry[] | null> {
    const { version, events } = await this.store.readStream(daemonAuditStreamId(internId));
    if (version === 0) return null;
    return events.flatMap((event) => {
      const kind = KIND_OF_TYPE.get(event.type);
      if (kind === undefined) return [];
      return [{ kind, member_id: String(event.data.memberId), at: String(event.data.at) }];
    });
  }
}
