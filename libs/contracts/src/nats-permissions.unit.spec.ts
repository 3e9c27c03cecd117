import { INTEGRATION_EVENT_TYPES, type IntegrationEventType } from './integration-events';
import { CACHE_EVICTING_EVENTS, INTEGRATION_EVENT_DURABLES, NATS_PROCESSES, natsInboxPrefix, natsPermissionsFor, type NatsProcess } from './nats-permissions';
import { subjectsFor } from './subjects';

/** nats-server's subject matching: `*` is one token, a trailing `>` one or more. */
function matches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i += 1) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

const prefix = 'acme.interns';
const subjects = subjectsFor(prefix);
const permissions = natsPermissionsFor(prefix);
const canPublish = (process: NatsProcess, subject: string) => permissions[process].publish.some((p) => matches(p, subject));
const canSubscribe = (process: NatsProcess, subject: string) => permissions[process].subscribe.some((p) => matches(p, subject));

const requestSubjects = (['lifecycle', 'runs', 'analytics', 'webhooks'] as const).flatMap((server) =>
  Object.values(subjects[server])
    .filter((subject): subject is string => typeof subject === 'string')
    .map((subject) => ({ server, subject })),
);

describe('natsPermissionsFor', () => {
  it.each(requestSubjects)('$subject: served by $server, published by its callers only', ({ server, subject }) => {
    expect(canSubscribe(server, subject)).toBe(true);
    expect(permissions[server].allowResponses).toBe(true);
    const callers = NATS_PROCESSES.filter((process) => canPublish(process, subject));
    expect(callers.length).toBeGreaterThan(0);
    expect(callers).not.toContain(server);
    for (const caller of callers) {
      // Its replies reach it on its own inbox, which no other process may read.
      expect(canSubscribe(caller, `${natsInboxPrefix(caller)}.abc.def`)).toBe(true);
      expect(NATS_PROCESSES.filter((process) => canSubscribe(process, `${natsInboxPrefix(caller)}.abc.def`))).toEqual([caller]);
    }
    // Nobody else listens in on a service's requests.
    expect(NATS_PROCESSES.filter((process) => canSubscribe(process, subject))).toEqual([server]);
  });

  it('lets the gateway call every route it serves and nothing it does not', () => {
    for (const subject of [subjects.lifecycle.createIntern, subjects.lifecycle.daemonSign, subjects.runs.chat, subjects.analytics.meta]) {
      expect(canPublish('gateway', subject)).toBe(true);
    }
    expect(canPublish('gateway', subjects.runs.runtimeBoot)).toBe(false);
    expect(canPublish('gateway', subjects.lifecycle.recordChatappInstall)).toBe(false);
    expect(canPublish('gateway', subjects.lifecycle.revokeDaemonTokens)).toBe(false);
    expect(canPublish('admin', subjects.lifecycle.revokeDaemonTokens)).toBe(true);
  });

  it("lets the door look up hostnames, check daemon tokens and claim nonces, and hear of its interns' status", () => {
    for (const subject of [subjects.lifecycle.internByHostname, subjects.lifecycle.daemonTokenCheck, subjects.lifecycle.claimDaemonNonce]) {
      expect(canPublish('gateway', subject)).toBe(true);
    }
    expect(NATS_PROCESSES.filter((process) => canPublish(process, subjects.lifecycle.claimDaemonNonce))).toEqual(['gateway']);
    expect(canSubscribe('gateway', subjects.integrationEvent('intern.status_changed'))).toBe(true);
    expect(canSubscribe('gateway', subjects.integrationEvent('intern.deleted'))).toBe(true);
    // Only those: runs' events (which may quote a transcript) and the intern's other events stay unread.
    expect(canSubscribe('gateway', subjects.integrationEvent('intern.updated'))).toBe(false);
    expect(canSubscribe('gateway', subjects.integrationEvent('run.completed'))).toBe(false);
  });

  it("lets the gateway drive terminals that only runs holds, and runs close another replica's", () => {
    const id = '0b0e6a52-7d7c-4a8e-9d43-3d7c2f1e9a10';
    expect(NATS_PROCESSES.filter((process) => canPublish(process, subjects.runs.terminalInput(id)))).toEqual(['gateway', 'runs']);
    expect(NATS_PROCESSES.filter((process) => canSubscribe(process, subjects.runs.terminalInput(id)))).toEqual(['runs']);
    expect(NATS_PROCESSES.filter((process) => canPublish(process, subjects.runs.terminalOutput(id)))).toEqual(['runs']);
    expect(NATS_PROCESSES.filter((process) => canSubscribe(process, subjects.runs.terminalOutput(id)))).toEqual(['gateway']);
    expect(NATS_PROCESSES.filter((process) => canPublish(process, subjects.lifecycle.recordTerminalAudit))).toEqual(['runs']);
  });

  it('lets the gateway drive file transfers that only runs serves', () => {
    const transfer = subjects.runs.fileTransfer('0b0e6a52-7d7c-4a8e-9d43-3d7c2f1e9a10');
    expect(NATS_PROCESSES.filter((process) => canPublish(process, transfer))).toEqual(['gateway']);
    expect(NATS_PROCESSES.filter((process) => canSubscribe(process, transfer))).toEqual(['runs']);
    expect(canPublish('gateway', subjects.runs.filesOpen)).toBe(true);
  });

  it('keeps the runs service off lifecycle commands (it may only look an intern up)', () => {
    expect(canPublish('runs', subjects.lifecycle.getIntern)).toBe(true);
    for (const subject of [subjects.lifecycle.createIntern, subjects.lifecycle.deleteIntern, subjects.lifecycle.daemonSign]) {
      expect(canPublish('runs', subject)).toBe(false);
    }
  });

  it('carries chat frames from runs to the gateway only', () => {
    const frames = subjects.runs.stream('s-1');
    expect(NATS_PROCESSES.filter((process) => canPublish(process, frames))).toEqual(['runs']);
    expect(NATS_PROCESSES.filter((process) => canSubscribe(process, frames))).toEqual(['gateway']);
  });

  it('lets gateways and runs replicas reach a session owner, served by runs only', () => {
    const session = subjects.runs.session('tok');
    expect(NATS_PROCESSES.filter((process) => canPublish(process, session))).toEqual(['gateway', 'runs']);
    expect(NATS_PROCESSES.filter((process) => canSubscribe(process, session))).toEqual(['runs']);
  });

  it('lets each source publish its own integration events and no one else any', () => {
    for (const type of Object.keys(INTEGRATION_EVENT_TYPES) as IntegrationEventType[]) {
      const source = INTEGRATION_EVENT_TYPES[type].source as NatsProcess;
      const subject = subjects.integrationEvent(type);
      expect(NATS_PROCESSES.filter((process) => canPublish(process, subject))).toEqual([source]);
      // Integration events are read through durable consumers; a plain subscription only where a cache drops entries.
      const evicting = (Object.entries(CACHE_EVICTING_EVENTS) as [NatsProcess, readonly string[]][])
        .filter(([, types]) => types.includes(type))
        .map(([process]) => process);
      expect(NATS_PROCESSES.filter((process) => canSubscribe(process, subject))).toEqual(evicting);
    }
  });

  it.each(Object.entries(INTEGRATION_EVENT_DURABLES) as [NatsProcess, string][])(
    'lets only %s create, pull from and acknowledge its durable %s',
    (owner, durable) => {
      for (const source of ['lifecycle', 'runs'] as const) {
        const stream = subjects.eventStreamName(source);
        const api = [
          `$JS.API.CONSUMER.CREATE.${stream}.${durable}`,
          `$JS.API.CONSUMER.INFO.${stream}.${durable}`,
          `$JS.API.CONSUMER.MSG.NEXT.${stream}.${durable}`,
          `$JS.ACK.${stream}.${durable}.1.2.3.4.5`,
        ];
        for (const subject of api) {
          expect(NATS_PROCESSES.filter((process) => canPublish(process, subject))).toEqual([owner]);
        }
      }
    },
  );

  it('gives each JetStream user its own streams and consumers only', () => {
    expect(canPublish('lifecycle', `$JS.API.STREAM.CREATE.${subjects.eventStreamName('lifecycle')}`)).toBe(true);
    expect(canPublish('lifecycle', `$JS.API.STREAM.CREATE.${subjects.eventStreamName('runs')}`)).toBe(false);
    // The gateway's JetStream use is reading run chunk logs and the workspace event stream (below); the admin CLI has none.
    expect(permissions.admin.publish.filter((subject) => subject.startsWith('$JS'))).toEqual([]);
    const ownStreams = [subjects.runChunkStreamName, subjects.workspaceEventStreamName];
    const gatewayApi = permissions.gateway.publish.filter((subject) => subject.startsWith('$JS'));
    expect(gatewayApi.filter((subject) => subject !== '$JS.API.INFO' && !ownStreams.some((stream) => subject.includes(`.${stream}`)))).toEqual([]);
    // Integration events quoting a purged transcript are deleted by the stream's owner only.
    expect(NATS_PROCESSES.filter((process) => canPublish(process, `$JS.API.STREAM.MSG.DELETE.${subjects.eventStreamName('runs')}`))).toEqual(['runs']);
    expect(NATS_PROCESSES.filter((process) => canPublish(process, `$JS.API.STREAM.MSG.DELETE.${subjects.eventStreamName('lifecycle')}`))).toEqual([]);
    for (const process of NATS_PROCESSES) {
      expect(canPublish(process, `$JS.API.STREAM.DELETE.${subjects.eventStreamName('runs')}`)).toBe(false);
      expect(canPublish(process, `$JS.API.CONSUMER.DELETE.${subjects.eventStreamName('runs')}.analytics`)).toBe(false);
    }
  });

  it("lets only runs write run chunk logs and keep their stream, and only the gateway follow them", () => {
    const chunkStream = subjects.runChunkStreamName;
    const log = subjects.runs.chunks('5f0c6a2e-1111-4111-8111-111111111111');
    expect(NATS_PROCESSES.filter((process) => canPublish(process, log))).toEqual(['runs']);
    expect(NATS_PROCESSES.filter((process) => canSubscribe(process, log))).toEqual([]);
    for (const subject of [`$JS.API.STREAM.CREATE.${chunkStream}`, `$JS.API.STREAM.UPDATE.${chunkStream}`]) {
      expect(NATS_PROCESSES.filter((process) => canPublish(process, subject))).toEqual(['runs']);
    }
    for (const subject of [`$JS.API.CONSUMER.CREATE.${chunkStream}.oc_1.${log}`, `$JS.API.CONSUMER.MSG.NEXT.${chunkStream}.oc_1`]) {
      expect(NATS_PROCESSES.filter((process) => canPublish(process, subject))).toEqual(['gateway']);
    }
    expect(NATS_PROCESSES.filter((process) => canPublish(process, `$JS.API.STREAM.MSG.GET.${chunkStream}`)).sort()).toEqual(['gateway', 'runs']);
    // Runs purges a run's subject when its transcript goes (CONTRACT section 22); nobody deletes the stream.
    expect(NATS_PROCESSES.filter((process) => canPublish(process, `$JS.API.STREAM.PURGE.${chunkStream}`))).toEqual(['runs']);
    for (const process of NATS_PROCESSES) {
      expect(canPublish(process, `$JS.API.STREAM.DELETE.${chunkStream}`)).toBe(false);
    }
  });

  it('lets only the gateway keep and read the workspace event stream, and nobody publish into it or delete it', () => {
    const stream = subjects.workspaceEventStreamName;
    for (const subject of [
      `$JS.API.STREAM.CREATE.${stream}`,
      `$JS.API.STREAM.UPDATE.${stream}`,
      `$JS.API.CONSUMER.CREATE.${stream}.oc_1`,
      `$JS.API.CONSUMER.MSG.NEXT.${stream}.oc_1`,
      `$JS.API.CONSUMER.DELETE.${stream}.oc_1`,
    ]) {
      expect(NATS_PROCESSES.filter((process) => canPublish(process, subject))).toEqual(['gateway']);
    }
    for (const process of NATS_PROCESSES) {
      expect(canPublish(process, `$JS.API.STREAM.DELETE.${stream}`)).toBe(false);
      expect(canPublish(process, `$JS.API.STREAM.PURGE.${stream}`)).toBe(false);
    }
    // Through that stream only: the gateway reads no source stream directly and publishes no event.
    for (const source of ['lifecycle', 'runs'] as const) {
      expect(canPublish('gateway', `$JS.API.CONSUMER.CREATE.${subjects.eventStreamName(source)}.oc_1`)).toBe(false);
      expect(canPublish('gateway', `$JS.API.STREAM.CREATE.${subjects.eventStreamName(source)}`)).toBe(false);
      expect(canPublish('gateway', subjects.eventsOf(source))).toBe(false);
    }
    // Which workspace a run event's intern is in: the owner lookup the admin CLI uses too.
    expect(NATS_PROCESSES.filter((process) => canPublish(process, subjects.lifecycle.internOwner))).toEqual(['gateway', 'admin']);
  });

  it('allows nothing outside the prefix, its own inbox and the JetStream API', () => {
    for (const process of NATS_PROCESSES) {
      for (const subject of [...permissions[process].publish, ...permissions[process].subscribe]) {
        expect(subject === `${natsInboxPrefix(process)}.>` || subject.startsWith('$JS.') || subject.startsWith(`${prefix}.`)).toBe(true);
        expect([`${prefix}.>`, `${prefix}.*.>`, '$JS.>', '$JS.API.>']).not.toContain(subject);
      }
    }
    expect(canSubscribe('analytics', `${prefix}.runs.stream.x`)).toBe(false);
    expect(canPublish('webhooks', subjects.lifecycle.ping)).toBe(false);
  });
});
