import { connect, Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { subjectsFor } from '@interns/contracts';

/** The runtime driver's operations, named as lifecycle calls them. */
export const RUNTIME_OPS = ['prepareDisk', 'boot', 'health', 'endRuns', 'stop', 'archive', 'purgeTranscripts', 'purgeEgressLog', 'removeDisk'] as const;
export type RuntimeOp = (typeof RUNTIME_OPS)[number];

export type Behaviour =
  | { kind: 'ok' }
  | { kind: 'fail'; message: string }
  | { kind: 'unhealthy'; detail: string }
  /** Takes the request and never answers (the caller times out). */
  | { kind: 'silent' };

export interface DriverCall {
  op: RuntimeOp;
  internId: string;
  data: Record<string, unknown>;
  /** What `inspect` said when the call arrived (e.g. whether the step's completion was already recorded). */
  inspected: unknown;
}

interface Gate {
  waiting: (() => void)[];
  released: boolean;
  arrived: Promise<void>;
  arrive: () => void;
}

/**
 * A stand-in for the runs service's runtime driver on real NATS, for lifecycle-only tests: it answers the
 * NestJS packet format (`{id, response, isDisposed}`), records every call, and can be told per operation
 * (and per intern) to fail, stay silent, answer unhealthy, hold answers until released, or be away
 * altogether (no responders).
 */
export class RuntimeDriverStandIn {
  readonly calls: DriverCall[] = [];
  private readonly behaviours = new Map<string, Behaviour>();
  private readonly gates = new Map<RuntimeOp, Gate>();
  private readonly subscriptions = new Map<RuntimeOp, Subscription>();
  private readonly afterReply = new Map<RuntimeOp, (call: DriverCall) => void>();

  private constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Record<RuntimeOp, string>,
    private readonly inspect: (op: RuntimeOp, internId: string) => Promise<unknown>,
  ) {}

  static async start(options: {
    natsUrl: string;
    prefix: string;
    inspect?: (op: RuntimeOp, internId: string) => Promise<unknown>;
  }): Promise<RuntimeDriverStandIn> {
    const nc = await connect({ servers: options.natsUrl, name: 'runtime-driver-stand-in' });
    const runs = subjectsFor(options.prefix).runs;
    const subjects: Record<RuntimeOp, string> = {
      prepareDisk: runs.runtimePrepareDisk,
      boot: runs.runtimeBoot,
      health: runs.runtimeHealth,
      endRuns: runs.runtimeEndRuns,
      stop: runs.runtimeStop,
      archive: runs.runtimeArchive,
      purgeTranscripts: runs.purgeTranscripts,
      purgeEgressLog: subjectsFor(options.prefix).egress.purgeLog,
      removeDisk: runs.runtimeRemoveDisk,
    };
    const standIn = new RuntimeDriverStandIn(nc, subjects, options.inspect ?? (async () => null));
    for (const op of RUNTIME_OPS) standIn.resume(op);
    await nc.flush();
    return standIn;
  }

  /** Default `ok`; with `internId` only for that intern. */
  behave(op: RuntimeOp, behaviour: Behaviour, internId?: string): void {
    this.behaviours.set(internId ? `${op}/${internId}` : op, behaviour);
  }

  /** Answers of `op` wait until `release()`; `arrived` settles when the first call is held. */
  hold(op: RuntimeOp): { arrived: Promise<void>; release: () => void } {
    let arrive = () => undefined as void;
    const arrived = new Promise<void>((resolve) => (arrive = resolve));
    const gate: Gate = { waiting: [], released: false, arrived, arrive };
    this.gates.set(op, gate);
    return {
      arrived,
      release: () => {
        gate.released = true;
        this.gates.delete(op);
        for (const answer of gate.waiting.splice(0)) answer();
      },
    };
  }

  /** Runs right after each answer of `op` (e.g. to kill the caller before it records the outcome). */
  onAnswered(op: RuntimeOp, hook: (call: DriverCall) => void): void {
    this.afterReply.set(op, hook);
  }

  /** Nobody serves `op` any more: callers get "no responders" at once. */
  async pause(op: RuntimeOp): Promise<void> {
    this.subscriptions.get(op)?.unsubscribe();
    this.subscriptions.delete(op);
    await this.nc.flush();
  }

  resume(op: RuntimeOp): void {
    if (this.subscriptions.has(op)) return;
    this.subscriptions.set(op, this.nc.subscribe(this.subjects[op], { callback: (_error, msg) => void this.serve(op, msg) }));
  }

  count(op: RuntimeOp, internId: string): number {
    return this.calls.filter((call) => call.op === op && call.internId === internId).length;
  }

  callsOf(internId: string): DriverCall[] {
    return this.calls.filter((call) => call.internId === internId);
  }

  async close(): Promise<void> {
    for (const gate of this.gates.values()) for (const answer of gate.waiting.splice(0)) answer();
    await this.nc.close();
  }

  private async serve(op: RuntimeOp, msg: Msg): Promise<void> {
    const packet = msg.json<{ id: string; data: Record<string, unknown> & { internId: string } }>();
    const call: DriverCall = {
      op,
      internId: packet.data.internId,
      data: packet.data,
      inspected: await this.inspect(op, packet.data.internId),
    };
    this.calls.push(call);
    const behaviour = this.behaviours.get(`${op}/${call.internId}`) ?? this.behaviours.get(op) ?? { kind: 'ok' };
    if (behaviour.kind === 'silent') return;
    const answer = () => {
      msg.respond(JSON.stringify({ id: packet.id, isDisposed: true, response: replyOf(op, behaviour) }));
      this.afterReply.get(op)?.(call);
    };
    const gate = this.gates.get(op);
    if (gate && !gate.released) {
      gate.waiting.push(answer);
      gate.arrive();
      return;
    }
    answer();
  }
}

function replyOf(op: RuntimeOp, behaviour: Exclude<Behaviour, { kind: 'silent' }>): Record<string, unknown> {
  if (behaviour.kind === 'fail') return { ok: false, message: behaviour.message };
  if (op === 'health') {
    return behaviour.kind === 'unhealthy'
      ? { ok: true, healthy: false, detail: behaviour.detail }
      : { ok: true, healthy: true, detail: 'ready' };
  }
  if (op === 'archive') return { ok: true, archivePath: '/archives/stand-in.tar.gz' };
  return { ok: true };
}
