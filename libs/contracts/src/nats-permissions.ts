// Longer than 300 lines on purpose: each service's whole NATS permission set in one file, so least privilege is reviewed side by side.
import type { IntegrationEventType } from './integration-events';
import type { ServiceName } from './service-names';
import { subjectsFor, type Subjects } from './subjects';

/**
 * Who may publish and subscribe what on NATS, derived from `subjectsFor(prefix)` (CONTRACT section 16).
 * Every request subject names its callers below; the tables are typed by the subject objects, so a new
 * subject does not compile until someone decides who calls it. The server of a subject is the service
 * it is namespaced under. A little over 300 lines on purpose: every grant of every process in one file, read as one.
 */
export const NATS_PROCESSES = ['gateway', 'lifecycle', 'runs', 'analytics', 'webhooks', 'egress', 'admin'] as const;
export type NatsProcess = (typeof NATS_PROCESSES)[number];

export interface NatsPermissions {
  publish: string[];
  subscribe: string[];
  /** May answer requests it received (publish once to their reply subject, whatever it is). */
  allowResponses: boolean;
}

/** Request subjects (plain strings) of one service's subject group; the subject builders are listed apart. */
type RequestSubjectsOf<G> = { [K in keyof G as G[K] extends string ? K : never]: G[K] };
type Callers<G> = Record<keyof RequestSubjectsOf<G>, readonly NatsProcess[]>;

/** Services' own liveness probe; the operator's CLI identity is the one allowed to ask. */
const PROBE: readonly NatsProcess[] = ['admin'];

const LIFECYCLE_CALLERS: Callers<Subjects['lifecycle']> = {
  createIntern: ['gateway'],
  updateIntern: ['gateway'],
  getIntern: ['gateway', 'runs', 'egress'],
  listInterns: ['gateway'],
  // The gateway's workspace event stream: which workspace a run event's intern is in (runs' events do not say).
  internOwner: ['admin', 'gateway'],
  internIcon: ['gateway'],
  provisionIntern: ['gateway'],
  suspendIntern: ['gateway'],
  deleteIntern: ['gateway'],
  recordChatappInstall: ['admin'],
  revokeDaemonTokens: ['admin'],
  daemonAccess: ['gateway'],
  daemonSign: ['gateway'],
  daemonSigningKeys: ['gateway'],
  // The door checks the tokens it is shown; intern runtimes are hosted by the runs service.
  daemonTokenCheck: ['gateway', 'runs'],
  // The door: which intern a Host names, and a v2 nonce claimed once for every gateway replica.
  internByHostname: ['gateway'],
  claimDaemonNonce: ['gateway'],
  daemonAudit: ['admin'],
  vaultList: ['gateway'],
  vaultPut: ['gateway'],
  vaultDelete: ['gateway'],
  vaultCopy: ['gateway'],
  egressPolicy: ['gateway'],
  // The egress proxy asks for the policy and the sealed secrets it enforces and opens.
  egressContext: ['egress'],
  putEgressPolicy: ['gateway'],
  // The runs replica holding a terminal records its attach and detach.
  recordTerminalAudit: ['runs'],
  ping: PROBE,
};

const RUNS_CALLERS: Callers<Subjects['runs']> = {
  ping: PROBE,
  chat: ['gateway'],
  invoke: ['gateway'],
  listRuns: ['gateway'],
  getRun: ['gateway'],
  followRun: ['gateway'],
  listQuestions: ['gateway'],
  cancelRun: ['gateway'],
  answerRun: ['gateway'],
  purgeTranscripts: ['lifecycle'],
  filesOpen: ['gateway'],
  terminalOpen: ['gateway'],
  runtimeHealth: ['lifecycle'],
  runtimePrepareDisk: ['lifecycle'],
  runtimeBoot: ['lifecycle'],
  runtimeStop: ['lifecycle'],
  runtimeEndRuns: ['lifecycle'],
  runtimeArchive: ['lifecycle'],
  runtimeRemoveDisk: ['lifecycle'],
};

const ANALYTICS_CALLERS: Callers<Subjects['analytics']> = {
  ping: PROBE,
  meta: ['gateway'],
  query: ['gateway'],
};

const WEBHOOKS_CALLERS: Callers<Subjects['webhooks']> = {
  ping: PROBE,
  createEndpoint: ['gateway'],
  deleteEndpoint: ['gateway'],
  listEndpoints: ['gateway'],
  listDeliveries: ['gateway'],
};

const EGRESS_CALLERS: Callers<Subjects['egress']> = {
  ping: PROBE,
  log: ['gateway'],
  purgeLog: ['lifecycle'],
};

/** Each sandboxed command's listener (`egress.cmd.open-listener.<instance>`): asked by the runs replica that runs it. */
const LISTENER_CALLERS: readonly NatsProcess[] = ['runs'];

/** Chat frames (`runs.stream.<id>`): published by the run's owner, read by the gateway relaying them. */
const STREAM_PUBLISHERS: readonly NatsProcess[] = ['runs'];
const STREAM_READERS: readonly NatsProcess[] = ['gateway'];
/** Session messages (`runs.session.<token>`): served by the owning runs replica, sent by gateways and other replicas. */
const SESSION_SENDERS: readonly NatsProcess[] = ['gateway', 'runs'];
const SESSION_SERVERS: readonly NatsProcess[] = ['runs'];
/** File transfers (`runs.files.<id>`): served by the runs replica that opened the transfer, driven by the gateway. */
const FILE_TRANSFER_SENDERS: readonly NatsProcess[] = ['gateway'];
const FILE_TRANSFER_SERVERS: readonly NatsProcess[] = ['runs'];
/**
 * Terminals (`runs.terminal.<id>.in|out`): the replica holding one serves its input subject, which the gateway drives
 * and other replicas close through (suspend and delete reach every replica); its output goes to the gateway only.
 */
const TERMINAL_INPUT_SENDERS: readonly NatsProcess[] = ['gateway', 'runs'];
const TERMINAL_HOLDERS: readonly NatsProcess[] = ['runs'];
const TERMINAL_READERS: readonly NatsProcess[] = ['gateway'];

/**
 * Run chunk logs (`runs.chunks.<run_id>` in the run chunk stream): appended by the run's owner (and by the
 * replica that ends a run whose owner died), read by the gateway following a run with an ordered consumer of
 * its own (ephemeral, named by the client library).
 */
const CHUNK_LOG_WRITERS: readonly NatsProcess[] = ['runs'];
const CHUNK_LOG_READERS: readonly NatsProcess[] = ['gateway'];

/**
 * The workspace event stream (`GET /events`): each gateway keeps the stream sourcing every integration event stream
 * (creating it, bringing its limits up to date) and reads it with an ordered consumer of its own. Only through that
 * stream: no grant on the sources themselves, and no publish into any stream.
 */
const WORKSPACE_EVENT_READERS: readonly NatsProcess[] = ['gateway'];

/** Services whose outbox relay publishes integration events into their own stream. */
export const INTEGRATION_EVENT_SOURCES = ['lifecycle', 'runs'] as const satisfies readonly ServiceName[];

/** The one whose integration events may quote a transcript (questions, failures), and which deletes them when it goes. */
const TRANSCRIPT_QUOTING_SOURCE: (typeof INTEGRATION_EVENT_SOURCES)[number] = 'runs';

/**
 * Consumers of integration events: the durable consumer each owns on every source stream (shared by its
 * replicas). Only the owner may create, read or pull from its durable.
 */
export const INTEGRATION_EVENT_DURABLES = { analytics: 'analytics', webhooks: 'webhooks' } as const satisfies Partial<
  Record<NatsProcess, string>
>;

/**
 * Integration events some process reads with a plain (core NATS) subscription as well, to drop cached entries: the
 * gateway's door caches an intern's hostname and status and drops them when its status changes or it is deleted.
 * No durable consumer: a missed event only leaves an entry to live out its TTL (AUTH_CACHE_TTL_MS).
 */
export const CACHE_EVICTING_EVENTS = {
  gateway: ['intern.status_changed', 'intern.deleted'],
} as const satisfies Partial<Record<NatsProcess, readonly IntegrationEventType[]>>;

/** Who hears lifecycle's notice of a committed intern change (`internChanged`): runs, whose intern lookups it caches. */
const INTERN_CHANGE_LISTENERS: readonly NatsProcess[] = ['runs'];

/**
 * Where replies to a process's own requests (and JetStream deliveries of its pull consumers) arrive: a prefix of
 * its own, so no process can subscribe to another's replies (with one shared `_INBOX.>` any could read all).
 */
export function natsInboxPrefix(process: NatsProcess): string {
  return `_INBOX_${process}`;
}

const inboxOf = (process: NatsProcess) => `${natsInboxPrefix(process)}.>`;
/** Asked by `jetstreamManager()` before anything else. */
const JS_ACCOUNT_INFO = '$JS.API.INFO';

const streamApi = (stream: string) => [`$JS.API.STREAM.INFO.${stream}`, `$JS.API.STREAM.CREATE.${stream}`];

/** Create (with or without a filter subject), look up, pull from and acknowledge one durable consumer. */
const durableApi = (stream: string, durable: string) => [
  `$JS.API.CONSUMER.CREATE.${stream}.${durable}`,
  `$JS.API.CONSUMER.CREATE.${stream}.${durable}.>`,
  `$JS.API.CONSUMER.DURABLE.CREATE.${stream}.${durable}`,
  `$JS.API.CONSUMER.INFO.${stream}.${durable}`,
  `$JS.API.CONSUMER.MSG.NEXT.${stream}.${durable}`,
  `$JS.ACK.${stream}.${durable}.>`,
];

export function natsPermissionsFor(prefix: string): Record<NatsProcess, NatsPermissions> {
  const subjects = subjectsFor(prefix);
  const permissions = Object.fromEntries(
    NATS_PROCESSES.map((process) => [process, { publish: new Set<string>(), subscribe: new Set<string>(), allowResponses: false }]),
  ) as Record<NatsProcess, { publish: Set<string>; subscribe: Set<string>; allowResponses: boolean }>;

  const requests = <G>(server: ServiceName, group: G, callers: Callers<G>) => {
    for (const key of Object.keys(callers) as (keyof typeof callers)[]) {
      const subject = group[key as keyof G] as string;
      permissions[server].subscribe.add(subject);
      permissions[server].allowResponses = true;
      for (const caller of callers[key]) {
        permissions[caller].publish.add(subject);
        permissions[caller].subscribe.add(inboxOf(caller));
      }
    }
  };
  requests('lifecycle', subjects.lifecycle, LIFECYCLE_CALLERS);
  requests('runs', subjects.runs, RUNS_CALLERS);
  requests('analytics', subjects.analytics, ANALYTICS_CALLERS);
  requests('webhooks', subjects.webhooks, WEBHOOKS_CALLERS);
  requests('egress', subjects.egress, EGRESS_CALLERS);
  for (const subject of [subjects.egress.openListener('*'), subjects.egress.closeListener('*'), subjects.egress.renewListener('*')]) {
    permissions.egress.subscribe.add(subject);
    for (const caller of LISTENER_CALLERS) {
      permissions[caller].publish.add(subject);
      permissions[caller].subscribe.add(inboxOf(caller));
    }
  }

  const anyStream = subjects.runs.stream('*');
  for (const process of STREAM_PUBLISHERS) permissions[process].publish.add(anyStream);
  for (const process of STREAM_READERS) permissions[process].subscribe.add(anyStream);
  const anySession = subjects.runs.session('*');
  for (const process of SESSION_SENDERS) {
    permissions[process].publish.add(anySession);
    permissions[process].subscribe.add(inboxOf(process));
  }
  for (const process of SESSION_SERVERS) {
    permissions[process].subscribe.add(anySession);
    permissions[process].allowResponses = true;
  }

  const anyTransfer = subjects.runs.fileTransfer('*');
  for (const process of FILE_TRANSFER_SENDERS) {
    permissions[process].publish.add(anyTransfer);
    permissions[process].subscribe.add(inboxOf(process));
  }
  for (const process of FILE_TRANSFER_SERVERS) {
    permissions[process].subscribe.add(anyTransfer);
    permissions[process].allowResponses = true;
  }

  const anyTerminalInput = subjects.runs.terminalInput('*');
  const anyTerminalOutput = subjects.runs.terminalOutput('*');
  for (const process of TERMINAL_INPUT_SENDERS) {
    permissions[process].publish.add(anyTerminalInput);
    permissions[process].subscribe.add(inboxOf(process));
  }
  for (const process of TERMINAL_HOLDERS) {
    permissions[process].subscribe.add(anyTerminalInput);
    permissions[process].publish.add(anyTerminalOutput);
    permissions[process].allowResponses = true;
  }
  for (const process of TERMINAL_READERS) permissions[process].subscribe.add(anyTerminalOutput);

  const chunkStream = subjects.runChunkStreamName;
  for (const process of CHUNK_LOG_WRITERS) {
    const writer = permissions[process];
    writer.publish.add(subjects.runs.chunks('*'));
    writer.publish.add(JS_ACCOUNT_INFO);
    for (const subject of [
      ...streamApi(chunkStream),
      `$JS.API.STREAM.UPDATE.${chunkStream}`,
      `$JS.API.STREAM.MSG.GET.${chunkStream}`,
      // A purged transcript's chunks (CONTRACT section 22): the run's subject is purged from the stream.
      `$JS.API.STREAM.PURGE.${chunkStream}`,
    ]) {
      writer.publish.add(subject);
    }
    // Publish acknowledgements arrive on its inbox.
    writer.subscribe.add(inboxOf(process));
  }
  for (const process of CHUNK_LOG_READERS) {
    const reader = permissions[process];
    reader.publish.add(JS_ACCOUNT_INFO);
    for (const subject of [
      `$JS.API.STREAM.INFO.${chunkStream}`,
      // Where an ended run's log ends (its last frame).
      `$JS.API.STREAM.MSG.GET.${chunkStream}`,
      `$JS.API.CONSUMER.CREATE.${chunkStream}`,
      `$JS.API.CONSUMER.CREATE.${chunkStream}.>`,
      `$JS.API.CONSUMER.INFO.${chunkStream}.>`,
      `$JS.API.CONSUMER.DELETE.${chunkStream}.>`,
      `$JS.API.CONSUMER.MSG.NEXT.${chunkStream}.>`,
    ]) {
      reader.publish.add(subject);
    }
    reader.subscribe.add(inboxOf(process));
  }

  for (const source of INTEGRATION_EVENT_SOURCES) {
    const stream = subjects.eventStreamName(source);
    const relay = permissions[source];
    relay.publish.add(subjects.eventsOf(source));
    relay.publish.add(JS_ACCOUNT_INFO);
    for (const subject of streamApi(stream)) relay.publish.add(subject);
    // Only the owning relay brings its stream's limits (max age, bytes, replicas) up to date.
    relay.publish.add(`$JS.API.STREAM.UPDATE.${stream}`);
    if (source === TRANSCRIPT_QUOTING_SOURCE) {
      // Integration events quoting a purged transcript (CONTRACT section 22) are deleted by their publisher, one
      // message at a time, found by subject.
      relay.publish.add(`$JS.API.STREAM.MSG.GET.${stream}`);
      relay.publish.add(`$JS.API.STREAM.MSG.DELETE.${stream}`);
      // ...and from the gateways' workspace event stream, which sources a copy of them.
      relay.publish.add(`$JS.API.STREAM.INFO.${subjects.workspaceEventStreamName}`);
      relay.publish.add(`$JS.API.STREAM.MSG.GET.${subjects.workspaceEventStreamName}`);
      relay.publish.add(`$JS.API.STREAM.MSG.DELETE.${subjects.workspaceEventStreamName}`);
    }
    relay.subscribe.add(inboxOf(source));
    for (const [consumer, durable] of Object.entries(INTEGRATION_EVENT_DURABLES) as [NatsProcess, string][]) {
      const own = permissions[consumer];
      own.publish.add(JS_ACCOUNT_INFO);
      // A consumer may start before the source's relay ever ran: it creates the stream the same way.
      for (const subject of [...streamApi(stream), ...durableApi(stream, durable)]) own.publish.add(subject);
      own.subscribe.add(inboxOf(consumer));
    }
  }

  const workspaceEvents = subjects.workspaceEventStreamName;
  for (const process of WORKSPACE_EVENT_READERS) {
    const reader = permissions[process];
    reader.publish.add(JS_ACCOUNT_INFO);
    for (const subject of [
      ...streamApi(workspaceEvents),
      `$JS.API.STREAM.UPDATE.${workspaceEvents}`,
      `$JS.API.CONSUMER.CREATE.${workspaceEvents}`,
      `$JS.API.CONSUMER.CREATE.${workspaceEvents}.>`,
      `$JS.API.CONSUMER.INFO.${workspaceEvents}.>`,
      `$JS.API.CONSUMER.DELETE.${workspaceEvents}.>`,
      `$JS.API.CONSUMER.MSG.NEXT.${workspaceEvents}.>`,
    ]) {
      reader.publish.add(subject);
    }
    reader.subscribe.add(inboxOf(process));
  }

  for (const [process, types] of Object.entries(CACHE_EVICTING_EVENTS) as [NatsProcess, readonly IntegrationEventType[]][]) {
    for (const type of types) permissions[process].subscribe.add(subjects.integrationEvent(type));
  }
  permissions.lifecycle.publish.add(subjects.internChanged);
  for (const process of INTERN_CHANGE_LISTENERS) permissions[process].subscribe.add(subjects.internChanged);

  return Object.fromEntries(
    NATS_PROCESSES.map((process) => {
      const { publish, subscribe, allowResponses } = permissions[process];
      return [process, { publish: [...publish].sort(), subscribe: [...subscribe].sort(), allowResponses }];
    }),
  ) as Record<NatsProcess, NatsPermissions>;
}

