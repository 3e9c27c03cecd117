import { setTimeout as sleep } from 'node:timers/promises';
import { BeforeApplicationShutdown, Logger, OnModuleInit } from '@nestjs/common';
import { type ConsumerMessages, DeliverPolicy, jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  INTEGRATION_EVENT_SOURCES,
  parseIntegrationEvent,
  type PlatformConfig,
  type Principal,
  type ReceivedIntegrationEvent,
  type Subjects,
  workspaceEventOf,
} from '@interns/contracts';
import { audienceIncludes, AudienceResolver, type InternWorkspaceLookup } from './event-audience';
import { EventRing } from './event-ring';
import type { EventStreamReader } from './event-stream.reader';
import { eventFeedEvents } from './events.metrics';
import { ensureWorkspaceEventStream } from './workspace-event-stream';

/**
 * A run may end a little after EXECUTION_DEADLINE_MS (an owner that died is found by the reconcile loop): the history
 * the feed reads at start reaches this much further back, so it has seen every going run's start and caller.
 */
const RUN_END_SLACK_MS = 10 * 60 * 1000;
/** Interns and sessions the audience resolver remembers, each (about 200 bytes an entry). */
const REMEMBERED_ENTRIES = 100_000;
/** Waits between attempts to reach the stream (NATS or JetStream away at start, or the consumer lost). */
const RETRY_DELAYS_MS = [200, 1000, 5000];

export interface WorkspaceEventFeedOptions {
  /** The process's NATS connection (read at start: the module is also built without one, to read its routes). */
  nats: () => NatsConnection;
  subjects: Subjects;
  config: PlatformConfig;
  lookUpWorkspace: InternWorkspaceLookup;
}

/**
 * The gateway's one reader of the workspace event stream, shared by every client of `GET /events` on this process
 * (interface section 23). It keeps the JetStream stream that sources every integration event stream into one order
 * (the same on every replica, so `Last-Event-ID` means the same place on each), reads it with one ordered consumer,
 * finds each event's audience once, makes its SSE frame once, and holds the last EVENTS_REPLAY_RETENTION_MS of them
 * (EventRing, bounded by EVENTS_REPLAY_MAX_BYTES). Readers are positions in that ring; a new event wakes the readers
 * of its workspace only. At start it reads back over the history window before it serves anyone.
 */
export class WorkspaceEventFeed implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('WorkspaceEventFeed');
  private readonly ring: EventRing;
  private readonly audiences: AudienceResolver;
  private readonly readers = new Map<string, Set<EventStreamReader>>();
  private readonly historyMs: number;
  private readonly retentionMs: number;
  private readonly caughtUp: Promise<void>;
  private markCaughtUp!: () => void;
  private isCaughtUp = false;
  private messages: ConsumerMessages | null = null;
  /** The last message of the stream taken in: a new consumer (after a loss) starts after it. */
  private lastStreamSeq = 0;
  private stopped = false;
  private sweeper: NodeJS.Timeout | null = null;

  constructor(private readonly options: WorkspaceEventFeedOptions) {
    const { config } = options;
    this.retentionMs = config.eventsReplayRetentionMs;
    this.historyMs = Math.max(config.eventsReplayRetentionMs, config.executionDeadlineMs + RUN_END_SLACK_MS);
    this.ring = new EventRing(config.eventsReplayMaxBytes);
    this.audiences = new AudienceResolver({ lookUpWorkspace: options.lookUpWorkspace, sessionMemoryMs: this.historyMs, maxEntries: REMEMBERED_ENTRIES });
    this.caughtUp = new Promise((resolve) => (this.markCaughtUp = resolve));
  }

  onModuleInit(): void {
    void this.run();
    const sweepMs = Math.min(60_000, Math.max(100, Math.floor(this.retentionMs / 10)));
    this.sweeper = setInterval(() => this.dropExpired(), sweepMs).unref();
  }

  /** Before the HTTP server closes: every reader ends (its client resumes elsewhere with `Last-Event-ID`). */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.sweeper !== null) clearInterval(this.sweeper);
    for (const workspace of this.readers.values()) for (const reader of workspace) reader.end('shutdown');
    await this.messages?.close();
  }

  /** Whether the feed has read its history and follows live, waiting at most `timeoutMs`. */
  async ready(timeoutMs: number): Promise<boolean> {
    if (this.isCaughtUp) return true;
    const timedOut = sleep(timeoutMs, false, { ref: false });
    return Promise.race([this.caughtUp.then(() => true), timedOut]);
  }

  /** Where a reader starts that only wants what happens from now on. */
  get livePosition(): number {
    return this.ring.next;
  }

  /**
   * Where a reader resumes after event `id`: null when the feed no longer holds it (older than the retention,
   * dropped for room) or the principal may not see it (an id of another workspace says nothing about it).
   */
  resumePosition(id: string, principal: Principal): number | null {
    const entry = this.ring.find(id.toLowerCase());
    if (entry === undefined || entry.storedAt < Date.now() - this.retentionMs) return null;
    return audienceIncludes(entry.audience, principal) ? entry.position + 1 : null;
  }

  /** The entries readers walk. */
  get entries(): EventRing {
    return this.ring;
  }

  /** Follows the feed with `reader` (woken for its principal's workspace) until the returned function is called. */
  attach(reader: EventStreamReader): () => void {
    const workspaceId = reader.principal.workspaceId;
    let workspace = this.readers.get(workspaceId);
    if (workspace === undefined) this.readers.set(workspaceId, (workspace = new Set()));
    workspace.add(reader);
    return () => {
      workspace.delete(reader);
      if (workspace.size === 0 && this.readers.get(workspaceId) === workspace) this.readers.delete(workspaceId);
    };
  }

  /** Keeps the stream and reads it until shutdown, starting again after the last message taken in when it is lost. */
  private async run(): Promise<void> {
    for (let attempt = 0; !this.stopped; attempt += 1) {
      try {
        await this.follow();
        attempt = 0;
      } catch (error) {
        if (this.stopped) return;
        this.logger.warn(`the workspace event stream could not be read: ${error instanceof Error ? error.message : String(error)}`);
      }
      if (!this.stopped) await sleep(RETRY_DELAYS_MS[Math.min(attempt, RETRY_DELAYS_MS.length - 1)]);
    }
  }

  private async follow(): Promise<void> {
    const { subjects, config } = this.options;
    const nc = this.options.nats();
    const name = subjects.workspaceEventStreamName;
    await ensureWorkspaceEventStream(nc, {
      name,
      sources: INTEGRATION_EVENT_SOURCES.map((source) => subjects.eventStreamName(source)),
      keepMs: this.historyMs,
      maxBytes: config.jetstreamMaxBytes,
      replicas: config.jetstreamReplicas,
    });
    const historyStart = new Date(Date.now() - this.historyMs);
    const { state } = await (await jetstreamManager(nc)).streams.info(name);
    // What there is to read back before serving: up to the stream's last message now (nothing when it is older).
    const catchUpTo = state.messages === 0 || Date.parse(state.last_ts) < historyStart.getTime() ? 0 : state.last_seq;
    if (catchUpTo <= this.lastStreamSeq) this.caughtUpNow();
    const start =
      this.lastStreamSeq > 0
        ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.lastStreamSeq + 1 }
        : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: historyStart.toISOString() };
    const consumer = await jetstream(nc).consumers.get(name, start);
    this.messages = await consumer.consume();
    for await (const message of this.messages) {
      await this.take(message);
      if (message.seq >= catchUpTo) this.caughtUpNow();
    }
  }

  private caughtUpNow(): void {
    if (this.isCaughtUp) return;
    this.isCaughtUp = true;
    this.markCaughtUp();
    this.logger.log(`the workspace event feed holds ${this.ring.next - this.ring.first} events and follows live`);
  }

  /** One message of the stream: learned from, and held and sent to its workspace's readers when it is recent. */
  private async take(message: JsMsg): Promise<void> {
    this.lastStreamSeq = message.seq;
    const storedAt = Math.floor(message.info.timestampNanos / 1_000_000);
    let event: ReceivedIntegrationEvent;
    try {
      event = parseIntegrationEvent(message.data);
    } catch {
      return eventFeedEvents.inc({ outcome: 'unreadable' });
    }
    // Republished by an outbox relay after its deduplication window: the same event, once.
    if (this.ring.has(event.id)) return eventFeedEvents.inc({ outcome: 'duplicate' });
    const audience = await this.audiences.resolve(event);
    if (storedAt < Date.now() - this.retentionMs) return eventFeedEvents.inc({ outcome: 'history' });
    if (audience === null) return eventFeedEvents.inc({ outcome: 'unroutable' });
    const payload = workspaceEventOf(event, audience.workspaceId);
    if (payload === null) return eventFeedEvents.inc({ outcome: 'unreadable' });
    // JSON text has no raw line breaks: the payload is one `data:` line.
    const frame = Buffer.from(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(payload)}\n\n`);
    const first = this.ring.first;
    this.ring.push({ id: event.id, storedAt, audience, frame });
    eventFeedEvents.inc({ outcome: 'held' });
    if (this.ring.first !== first) this.tellDropped();
    for (const reader of this.readers.get(audience.workspaceId) ?? []) reader.wake();
  }

  private dropExpired(): void {
    if (this.ring.dropStoredBefore(Date.now() - this.retentionMs)) this.tellDropped();
  }

  private tellDropped(): void {
    const first = this.ring.first;
    for (const workspace of this.readers.values()) for (const reader of workspace) reader.dropped(first);
  }
}
