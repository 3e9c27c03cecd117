import { INTEGRATION_EVENT_TYPES, type IntegrationEventType } from './integration-events';
import type { ServiceName } from './service-names';

/**
 * Every NATS subject and JetStream name, namespaced by NATS_PREFIX so two systems can share one broker.
 * Shape: `<prefix>.<service>.<cmd|qry>.<name>`, `<prefix>.evt.<service>.<event-type>`,
 * `<prefix>.runs.stream.<stream_id>`, `<prefix>.runs.session.<session_id>`, `<prefix>.runs.chunks.<run_id>`,
 * `<prefix>.runs.files.<transfer_id>`, `<prefix>.runs.terminal.<terminal_id>.in|out`.
 */

export const LIFECYCLE_COMMANDS = {
  createIntern: 'create-intern',
  updateIntern: 'update-intern',
  provisionIntern: 'provision-intern',
  suspendIntern: 'suspend-intern',
  deleteIntern: 'delete-intern',
  /** Admin: a workspace's chat-app install was recorded; releases interns waiting for it. */
  recordChatappInstall: 'record-chatapp-install',
  /** Admin: an identity apply left members inactive or organizations outside the programme; their daemon tokens go. */
  revokeDaemonTokens: 'revoke-daemon-tokens',
  /** Reveal a daemon token (recorded in the audit). */
  daemonAccess: 'daemon-access',
  /** Sign an invoke request for a daemon (recorded in the audit). */
  daemonSign: 'daemon-sign',
  /** The door: marks a v2 signature's nonce used, once for every gateway replica (interface section 20). */
  claimDaemonNonce: 'claim-daemon-nonce',
  /** The vault (interface section 18): create or replace, delete, copy workspace secrets into an intern's vault. */
  vaultPut: 'vault-put',
  vaultDelete: 'vault-delete',
  vaultCopy: 'vault-copy',
  /** An intern's egress policy (interface section 19): replace its allow list. */
  putEgressPolicy: 'put-egress-policy',
  /** Runs records a terminal's attach or detach in the intern's audit (interface section 20). */
  recordTerminalAudit: 'record-terminal-audit',
} as const;

export const LIFECYCLE_QUERIES = {
  getIntern: 'get-intern',
  listInterns: 'list-interns',
  /** Admin lookup of an intern's organization and workspace (for minting intern keys). */
  internOwner: 'intern-owner',
  internIcon: 'intern-icon',
  /** The public signing keys as a JWKS. */
  daemonSigningKeys: 'daemon-signing-keys',
  /** The door (and a runtime) validates a daemon token. */
  daemonTokenCheck: 'daemon-token-check',
  /** The door: the intern a hostname names (interface section 20). */
  internByHostname: 'intern-by-hostname',
  /** Admin: an intern's recorded reveals and signings. */
  daemonAudit: 'daemon-audit',
  vaultList: 'vault-list',
  /** An intern's egress policy (interface section 19). */
  egressPolicy: 'egress-policy',
  /** The egress proxy: an intern's policy and the secrets it may use, sealed. */
  egressContext: 'egress-context',
  ping: 'ping',
} as const;

export const RUNS_QUERIES = {
  ping: 'ping',
  runtimeHealth: 'runtime-health',
  /** Runs as resources and the question inbox (CONTRACT section 12). */
  listRuns: 'list-runs',
  getRun: 'get-run',
  /** A run, for following its chunks: where they are kept. */
  followRun: 'follow-run',
  listQuestions: 'list-questions',
} as const;

/** Chat and invoke (CONTRACT sections 6 and 7), and a run's cancel and answer (section 12), served by any runs replica. */
export const RUNS_COMMANDS = {
  chat: 'chat',
  invoke: 'invoke',
  cancelRun: 'cancel-run',
  answerRun: 'answer-run',
  /** Teardown (CONTRACT section 22): purge a deleted intern's transcripts and run chunks before its teardown completes. */
  purgeTranscripts: 'purge-transcripts',
  /** An intern's files (interface section 21): list, delete, or open a download or upload transfer. */
  filesOpen: 'files-open',
  /** A terminal on a running intern (interface section 20), opened by the door; its bytes then go to its own subjects. */
  terminalOpen: 'terminal-open',
} as const;

/** The runtime driver of the local runs service (CONTRACT section 5 steps; lifecycle calls these over NATS). */
export const RUNTIME_COMMANDS = {
  prepareDisk: 'runtime-prepare-disk',
  boot: 'runtime-boot',
  stop: 'runtime-stop',
  endRuns: 'runtime-end-runs',
  archive: 'runtime-archive',
  removeDisk: 'runtime-remove-disk',
} as const;
export const ANALYTICS_QUERIES = { ping: 'ping', meta: 'meta', query: 'query' } as const;

/** A workspace's webhook endpoints (CONTRACT section 13), served by the webhooks service. */
export const WEBHOOKS_COMMANDS = { createEndpoint: 'create-endpoint', deleteEndpoint: 'delete-endpoint' } as const;
export const WEBHOOKS_QUERIES = { ping: 'ping', listEndpoints: 'list-endpoints', listDeliveries: 'list-deliveries' } as const;

/** The egress proxy (interface section 19): a listener per sandboxed command, and the egress log. */
export const EGRESS_COMMANDS = {
  openListener: 'open-listener',
  closeListener: 'close-listener',
  /** A long-lived command (a terminal) keeps its listener: its expiry starts again. */
  renewListener: 'renew-listener',
  /** Teardown (CONTRACT section 22): a deleted intern's egress log goes. */
  purgeLog: 'purge-log',
} as const;
export const EGRESS_QUERIES = { ping: 'ping', log: 'log' } as const;

export function subjectsFor(prefix: string) {
  const p = assertPrefix(prefix);
  const cmd = (service: ServiceName, name: string) => `${p}.${service}.cmd.${name}`;
  const qry = (service: ServiceName, name: string) => `${p}.${service}.qry.${name}`;
  return {
    prefix: p,
    lifecycle: {
      createIntern: cmd('lifecycle', LIFECYCLE_COMMANDS.createIntern),
      updateIntern: cmd('lifecycle', LIFECYCLE_COMMANDS.updateIntern),
      getIntern: qry('lifecycle', LIFECYCLE_QUERIES.getIntern),
      listInterns: qry('lifecycle', LIFECYCLE_QUERIES.listInterns),
      internOwner: qry('lifecycle', LIFECYCLE_QUERIES.internOwner),
      internIcon: qry('lifecycle', LIFECYCLE_QUERIES.internIcon),
      provisionIntern: cmd('lifecycle', LIFECYCLE_COMMANDS.provisionIntern),
      suspendIntern: cmd('lifecycle', LIFECYCLE_COMMANDS.suspendIntern),
      deleteIntern: cmd('lifecycle', LIFECYCLE_COMMANDS.deleteIntern),
      recordChatappInstall: cmd('lifecycle', LIFECYCLE_COMMANDS.recordChatappInstall),
      revokeDaemonTokens: cmd('lifecycle', LIFECYCLE_COMMANDS.revokeDaemonTokens),
      daemonAccess: cmd('lifecycle', LIFECYCLE_COMMANDS.daemonAccess),
      daemonSign: cmd('lifecycle', LIFECYCLE_COMMANDS.daemonSign),
      claimDaemonNonce: cmd('lifecycle', LIFECYCLE_COMMANDS.claimDaemonNonce),
      internByHostname: qry('lifecycle', LIFECYCLE_QUERIES.internByHostname),
      daemonSigningKeys: qry('lifecycle', LIFECYCLE_QUERIES.daemonSigningKeys),
      daemonTokenCheck: qry('lifecycle', LIFECYCLE_QUERIES.daemonTokenCheck),
      daemonAudit: qry('lifecycle', LIFECYCLE_QUERIES.daemonAudit),
      vaultList: qry('lifecycle', LIFECYCLE_QUERIES.vaultList),
      vaultPut: cmd('lifecycle', LIFECYCLE_COMMANDS.vaultPut),
      vaultDelete: cmd('lifecycle', LIFECYCLE_COMMANDS.vaultDelete),
      vaultCopy: cmd('lifecycle', LIFECYCLE_COMMANDS.vaultCopy),
      egressPolicy: qry('lifecycle', LIFECYCLE_QUERIES.egressPolicy),
      egressContext: qry('lifecycle', LIFECYCLE_QUERIES.egressContext),
      putEgressPolicy: cmd('lifecycle', LIFECYCLE_COMMANDS.putEgressPolicy),
      recordTerminalAudit: cmd('lifecycle', LIFECYCLE_COMMANDS.recordTerminalAudit),
      ping: qry('lifecycle', LIFECYCLE_QUERIES.ping),
    },
    runs: {
      ping: qry('runs', RUNS_QUERIES.ping),
      chat: cmd('runs', RUNS_COMMANDS.chat),
      invoke: cmd('runs', RUNS_COMMANDS.invoke),
      listRuns: qry('runs', RUNS_QUERIES.listRuns),
      getRun: qry('runs', RUNS_QUERIES.getRun),
      followRun: qry('runs', RUNS_QUERIES.followRun),
      listQuestions: qry('runs', RUNS_QUERIES.listQuestions),
      cancelRun: cmd('runs', RUNS_COMMANDS.cancelRun),
      answerRun: cmd('runs', RUNS_COMMANDS.answerRun),
      purgeTranscripts: cmd('runs', RUNS_COMMANDS.purgeTranscripts),
      filesOpen: cmd('runs', RUNS_COMMANDS.filesOpen),
      terminalOpen: cmd('runs', RUNS_COMMANDS.terminalOpen),
      runtimeHealth: qry('runs', RUNS_QUERIES.runtimeHealth),
      runtimePrepareDisk: cmd('runs', RUNTIME_COMMANDS.prepareDisk),
      runtimeBoot: cmd('runs', RUNTIME_COMMANDS.boot),
      runtimeStop: cmd('runs', RUNTIME_COMMANDS.stop),
      runtimeEndRuns: cmd('runs', RUNTIME_COMMANDS.endRuns),
      runtimeArchive: cmd('runs', RUNTIME_COMMANDS.archive),
      runtimeRemoveDisk: cmd('runs', RUNTIME_COMMANDS.removeDisk),
      stream: (streamId: string) => `${p}.runs.stream.${streamId}`,
      /** Takes the token of `sessionSubjectToken(sessionId)`, not the session id itself. */
      session: (sessionToken: string) => `${p}.runs.session.${sessionToken}`,
      /** A run's chunk log, kept in the run chunk stream for RUN_REPLAY_RETENTION_MS after the run ends. */
      chunks: (runId: string) => `${p}.runs.chunks.${runId}`,
      /** One file transfer's chunks and acknowledgements, served by the runs replica that opened it. */
      fileTransfer: (transferId: string) => `${p}.runs.files.${transferId}`,
      /** A terminal's input, resizes, acknowledgements, heartbeats and close: served by the runs replica holding it. */
      terminalInput: (terminalId: string) => `${p}.runs.terminal.${terminalId}.in`,
      /** A terminal's output and its closing, read by the gateway serving its client. */
      terminalOutput: (terminalId: string) => `${p}.runs.terminal.${terminalId}.out`,
    },
    /** JetStream stream holding every run's chunk log (`runs.chunks.*`). */
    runChunkStreamName: `${streamNamePrefix(p)}run_chunks`,
    analytics: {
      ping: qry('analytics', ANALYTICS_QUERIES.ping),
      meta: qry('analytics', ANALYTICS_QUERIES.meta),
      query: qry('analytics', ANALYTICS_QUERIES.query),
    },
    webhooks: {
      ping: qry('webhooks', WEBHOOKS_QUERIES.ping),
      createEndpoint: cmd('webhooks', WEBHOOKS_COMMANDS.createEndpoint),
      deleteEndpoint: cmd('webhooks', WEBHOOKS_COMMANDS.deleteEndpoint),
      listEndpoints: qry('webhooks', WEBHOOKS_QUERIES.listEndpoints),
      listDeliveries: qry('webhooks', WEBHOOKS_QUERIES.listDeliveries),
    },
    egress: {
      ping: qry('egress', EGRESS_QUERIES.ping),
      log: qry('egress', EGRESS_QUERIES.log),
      /**
       * Addressed to one egress process (its instance id, in EGRESS_SOCKET_DIR): the one whose sockets the asking runs
       * replica can bind, the sidecar in its own pod.
       */
      openListener: (instance: string) => `${cmd('egress', EGRESS_COMMANDS.openListener)}.${instance}`,
      closeListener: (instance: string) => `${cmd('egress', EGRESS_COMMANDS.closeListener)}.${instance}`,
      renewListener: (instance: string) => `${cmd('egress', EGRESS_COMMANDS.renewListener)}.${instance}`,
      purgeLog: cmd('egress', EGRESS_COMMANDS.purgeLog),
    },
    /** Integration event subject: `<prefix>.evt.<publishing service>.<type>`, e.g. `interns.evt.runs.run.completed`. */
    integrationEvent: (type: IntegrationEventType) => `${p}.evt.${INTEGRATION_EVENT_TYPES[type].source}.${type}`,
    /**
     * Lifecycle's notice of a committed change to an intern (its id, plain text; core NATS), published before it
     * answers the command: runs drops its cached lookup of the intern. Private to the platform, unlike the
     * integration events, which come later (through the outbox relay) and leave instructions out.
     */
    internChanged: `${p}.lifecycle.notice.intern-changed`,
    /** Wildcard covering every integration event of one service. */
    eventsOf: (service: ServiceName) => `${p}.evt.${service}.>`,
    /** JetStream stream holding one service's integration events (stream names allow no dots). */
    eventStreamName: (service: ServiceName) => `${streamNamePrefix(p)}${service}_events`,
    /**
     * JetStream stream sourcing every service's integration event stream into one order, the same on every gateway
     * replica: the workspace event stream (`GET /events`) reads it and resumes by its order.
     */
    workspaceEventStreamName: `${streamNamePrefix(p)}workspace_events`,
  };
}

export type Subjects = ReturnType<typeof subjectsFor>;

/** How every JetStream stream name of a NATS_PREFIX starts (stream names allow no dots): `interns.dev` -> `interns_dev_`. */
export function streamNamePrefix(prefix: string): string {
  return `${prefix.replace(/[^A-Za-z0-9_-]/g, '_')}_`;
}

/**
 * Whether a stream belongs to NATS_PREFIX `prefix`: its name starts with the prefix's stream name prefix and every
 * subject it holds lies under `<prefix>.`. The name alone would also match another system's streams on the same
 * server (`interns_staging_...` starts with `interns_`); their subjects (`interns_staging.`) do not. A KV bucket or
 * object store named after the prefix (`KV_<prefix>_...`, `OBJ_<prefix>_...`, subjects `$KV.<bucket>.>`) counts too.
 */
export function isStreamOfPrefix(stream: { name: string; subjects?: readonly string[] }, prefix: string): boolean {
  const ownName = streamNamePrefix(prefix);
  const subjects = stream.subjects ?? [];
  if (stream.name.startsWith(ownName)) {
    return subjects.length > 0 && subjects.every((subject) => subject.startsWith(`${prefix}.`));
  }
  for (const [kind, subjectRoot] of [['KV_', '$KV.'], ['OBJ_', '$O.']] as const) {
    if (!stream.name.startsWith(`${kind}${ownName}`)) continue;
    const bucket = stream.name.slice(kind.length);
    return subjects.length > 0 && subjects.every((subject) => subject.startsWith(`${subjectRoot}${bucket}.`));
  }
  return false;
}

const PREFIX_PATTERN = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;

export function assertPrefix(prefix: string): string {
  if (!PREFIX_PATTERN.test(prefix)) {
    throw new Error(`NATS_PREFIX "${prefix}" must be dot-separated tokens of letters, digits, "_" or "-"`);
  }
  return prefix;
}
