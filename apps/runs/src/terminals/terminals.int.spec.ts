/**
 * Terminals end to end below the door: the runs service in this process (real PostgreSQL, real NATS, the real
 * bubblewrap sandbox under a real pseudo-terminal), driven through the gateway's end (TerminalClient) over NATS, with
 * a stand-in lifecycle that records the audit requests it is sent.
 */
import 'reflect-metadata';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  DomainError,
  subjectsFor,
  TERMINAL_INPUT_OPS,
  TERMINAL_LIVENESS_MS,
  TERMINAL_OP_HEADER,
  TERMINAL_OUTPUT_OPS,
  TERMINAL_WINDOW_BYTES,
  type RpcRequestPacket,
  type RuntimeStepReply,
  type Subjects,
  type TerminalAuditRequest,
  type TerminalCloseReason,
  type TerminalOpenRequest,
} from '@interns/contracts';
import { RpcClient, terminalHeaders, TerminalClient, type Terminal } from '@interns/messaging';
import { bootstrapService, type RunningService } from '@interns/service-runtime';
import { createTestDatabase, testNatsPrefix, type TestDatabase } from '@interns/testing';
import { RUNS_MIGRATIONS } from '../migrations';
import { RunsModule } from '../runs.module';
import { TerminalHost } from './terminal-host';

const IDLE_MS = 6000;
const UID_BASE = 250000 + Math.floor(Math.random() * 5000) * 10;

/** What the terminal printed so far (every byte acknowledged as it arrives, unless `ack` is false). */
function screen(terminal: Terminal, ack = true) {
  let text = '';
  let bytes = 0;
  terminal.onOutput((data) => {
    text += data.toString('utf8');
    bytes += data.byteLength;
    if (ack) terminal.flushed(data.byteLength);
  });
  return {
    text: () => text,
    bytes: () => bytes,
    until: async (needle: string | RegExp, ms = 10_000): Promise<RegExpMatchArray | string> => {
      const deadline = Date.now() + ms;
      for (;;) {
        const match = typeof needle === 'string' ? (text.includes(needle) ? needle : null) : text.match(needle);
        if (match !== null) return match;
        if (Date.now() > deadline) throw new Error(`not seen within ${ms} ms: ${String(needle)}\n--- screen ---\n${text.slice(-2000)}`);
        await sleep(20);
      }
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The uid's processes on this host, read-only (the sandbox's PID namespace is below ours). */
function processesOfUid(uid: number): string {
  try {
    return execFileSync('pgrep', ['-u', String(uid), '-l'], { encoding: 'utf8' });
  } catch {
    return '';
  }
}

async function noProcessesOf(uid: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (processesOfUid(uid) !== '' && Date.now() < deadline) await sleep(50);
  expect(processesOfUid(uid)).toBe('');
}

async function refusalOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DomainError) return error.reason;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('terminals (runs side, over NATS, in the sandbox)', () => {
  const prefix = testNatsPrefix();
  const subjects: Subjects = subjectsFor(prefix);
  let db: TestDatabase;
  let root: string;
  let nc: NatsConnection;
  let rpc: RpcClient;
  let runs: RunningService;
  let client: TerminalClient;
  let auditStandIn: Subscription;
  const audits: TerminalAuditRequest[] = [];

  async function bootIntern(): Promise<string> {
    const internId = randomUUID();
    const request = { internId, correlationId: randomUUID() };
    expect(await rpc.request<RuntimeStepReply>(subjects.runs.runtimePrepareDisk, request, { timeoutMs: 30_000 })).toEqual({ ok: true });
    const boot = { ...request, model: null, hostname: `ada-${internId.slice(0, 8)}.interns.localhost` };
    expect(await rpc.request<RuntimeStepReply>(subjects.runs.runtimeBoot, boot, { timeoutMs: 30_000 })).toEqual({ ok: true });
    return internId;
  }

  async function rowsOf(internId: string): Promise<number> {
    const [row]: { count: string }[] = await runs.deps.dataSource.query('SELECT count(*) FROM runs.terminal_sessions WHERE intern_id = $1', [internId]);
    return Number(row.count);
  }

  const open = (internId: string, memberId = 'member-ada', cols = 80, rows = 24) => client.openTerminal({ internId, memberId, cols, rows });

  async function uidIn(terminal: Terminal, seen: ReturnType<typeof screen>): Promise<number> {
    terminal.write('echo "uid=$(id -u)"\r');
    const match = (await seen.until(/uid=(\d+)/)) as RegExpMatchArray;
    return Number(match[1]);
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    root = await mkdtemp(join(tmpdir(), 'runs-terminals-'));
    // The sandbox user reaches its workspace by path below this directory.
    await chmod(root, 0o711);
    nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    rpc = new RpcClient(nc);
    auditStandIn = nc.subscribe(subjects.lifecycle.recordTerminalAudit, {
      callback: (error, msg) => {
        if (error) return;
        const packet = msg.json<RpcRequestPacket<TerminalAuditRequest>>();
        audits.push(packet.data);
        msg.respond(JSON.stringify({ id: packet.id, response: { recorded: true }, isDisposed: true }));
      },
    });
    runs = await bootstrapService({
      service: 'runs',
      schema: 'runs',
      migrations: RUNS_MIGRATIONS,
      port: (config) => config.runsPort,
      rootModule: (deps) => RunsModule.forRoot(deps),
      env: {
        DATABASE_URL: db.url,
        NATS_PREFIX: prefix,
        RUNS_PORT: '0',
        DATA_DIR: join(root, 'data'),
        ARCHIVE_DIR: join(root, 'archive'),
        RUNTIME_NETWORK: 'none',
        WORKSPACE_DISK: 'directory',
        SANDBOX_UID_BASE: String(UID_BASE),
        TERMINAL_IDLE_MS: String(IDLE_MS),
      },
      handleSignals: false,
      logger: false,
    });
    client = new TerminalClient(nc, subjects.runs, { heartbeatMs: 1000, livenessMs: 5000 });
  }, 120_000);

  afterAll(async () => {
    await runs?.close();
    auditStandIn?.unsubscribe();
    await nc?.drain();
    await db?.drop();
    if (root) await rm(root, { recursive: true, force: true });
  }, 60_000);

  it("is a login shell as the intern's own uid in its workspace, resized on request; closing ends every process and is audited", async () => {
    const internId = await bootIntern();
    const terminal = await open(internId, 'member-ada', 100, 30);
    const seen = screen(terminal);
    terminal.write('echo "uid=$(id -u) home=$HOME pwd=$(pwd) term=$TERM size=$(stty size)"\r');
    const match = (await seen.until(/uid=(\d+) home=\/workspace pwd=\/workspace term=xterm-256color size=30 100/)) as RegExpMatchArray;
    const uid = Number(match[1]);
    expect(uid).not.toBe(0);
    expect(uid).toBeGreaterThan(UID_BASE);
    terminal.resize(132, 43);
    terminal.write('echo "resized=$(stty size)"\r');
    await seen.until('resized=43 132');
    terminal.write('sleep 1000 & echo "started=$!"\r');
    await seen.until(/started=\d+/);
    expect(processesOfUid(uid)).toContain('sleep');
    expect(await rowsOf(internId)).toBe(1);

    await terminal.close();
    expect(await terminal.closed).toBe('client_closed');
    await noProcessesOf(uid);
    expect(await rowsOf(internId)).toBe(0);
    const mine = audits.filter((entry) => entry.internId === internId);
    expect(mine.map((entry) => [entry.kind, entry.memberId])).toEqual([
      ['terminal_attached', 'member-ada'],
      ['terminal_detached', 'member-ada'],
    ]);
    expect(Date.parse(mine[1].at)).toBeGreaterThanOrEqual(Date.parse(mine[0].at));
  }, 60_000);

  it('holds at most TERMINALS_PER_INTERN (4) per intern: the fifth is refused with limit_reached until one closes', async () => {
    const internId = await bootIntern();
    const terminals = await Promise.all([1, 2, 3, 4].map(() => open(internId)));
    expect(await refusalOf(open(internId))).toBe('limit_reached');
    expect(await rowsOf(internId)).toBe(4);
    await terminals[0].close();
    const fifth = await open(internId);
    await Promise.all([...terminals.slice(1), fifth].map((terminal) => terminal.close()));
    expect(await rowsOf(internId)).toBe(0);
    // Another intern's cap is its own.
    const other = await open(await bootIntern());
    await other.close();
  }, 90_000);

  it('pauses the shell once a window of output is unacknowledged, and resumes it on acknowledgements', async () => {
    const internId = await bootIntern();
    const terminal = await open(internId);
    const seen = screen(terminal, false);
    const host = runs.app.get(TerminalHost);
    // Far more output than the window, then a marker.
    terminal.write('head -c 3000000 /dev/zero | tr "\\0" x; echo; echo flow-$((6*7))\r');
    // Output stops near the window and stays there: the client holds no more than that, nor does runs.
    let last = -1;
    const deadline = Date.now() + 10_000;
    while (seen.bytes() !== last && Date.now() < deadline) {
      last = seen.bytes();
      await sleep(700);
    }
    expect(seen.bytes()).toBeGreaterThanOrEqual(TERMINAL_WINDOW_BYTES);
    expect(seen.bytes()).toBeLessThan(TERMINAL_WINDOW_BYTES + 128 * 1024);
    expect(host.flowOf(terminal.id)).toEqual({ paused: true, flushed: 0, sent: seen.bytes() });
    await sleep(1000);
    expect(seen.bytes()).toBe(last);
    expect(seen.text()).not.toContain('flow-42');

    // Acknowledging what arrived (and what arrives next) lets the rest through.
    terminal.flushed(seen.bytes());
    const deadlineMore = Date.now() + 20_000;
    let received = seen.bytes();
    terminal.onOutput((data) => {
      received += data.byteLength;
      terminal.flushed(data.byteLength);
      if (data.toString('utf8').includes('flow-42')) received = Number.POSITIVE_INFINITY;
    });
    while (received !== Number.POSITIVE_INFINITY && Date.now() < deadlineMore) await sleep(50);
    expect(received).toBe(Number.POSITIVE_INFINITY);
    expect(host.flowOf(terminal.id)?.paused).toBe(false);
    await terminal.close();
  }, 60_000);

  it('closes a terminal idle for TERMINAL_IDLE_MS, with its processes', async () => {
    const internId = await bootIntern();
    const terminal = await open(internId);
    const seen = screen(terminal);
    const uid = await uidIn(terminal, seen);
    const reasons: TerminalCloseReason[] = [];
    terminal.onClose((reason) => reasons.push(reason));
    const startedAt = Date.now();
    expect(await terminal.closed).toBe('idle');
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(IDLE_MS - 1000);
    expect(reasons).toEqual(['idle']);
    await noProcessesOf(uid);
    expect(await rowsOf(internId)).toBe(0);
    expect(audits.filter((entry) => entry.internId === internId).map((entry) => entry.kind)).toEqual(['terminal_attached', 'terminal_detached']);
  }, 60_000);

  it("closes every terminal of an intern at its end-runs and stop steps (suspend), and opens none once it is stopped", async () => {
    const internId = await bootIntern();
    const first = await open(internId);
    const second = await open(internId, 'member-grace');
    const seen = screen(first);
    const uid = await uidIn(first, seen);
    first.write('sleep 1000 &\r');
    const untouched = await open(await bootIntern());

    const step = { internId, correlationId: randomUUID() };
    expect(await rpc.request(subjects.runs.runtimeEndRuns, { ...step, reason: 'intern_suspended' }, { timeoutMs: 30_000 })).toEqual({ ok: true });
    expect(await first.closed).toBe('intern_suspended');
    expect(await second.closed).toBe('intern_suspended');
    await noProcessesOf(uid);
    expect(await rowsOf(internId)).toBe(0);
    expect(await rpc.request(subjects.runs.runtimeStop, step, { timeoutMs: 30_000 })).toEqual({ ok: true });
    expect(await refusalOf(open(internId))).toBe('intern_not_running');
    expect(await rowsOf(internId)).toBe(0);

    // Another intern's terminal goes on.
    const other = screen(untouched);
    untouched.write('echo still-$((1+1))\r');
    await other.until('still-2');
    await untouched.close();
    const kinds = audits.filter((entry) => entry.internId === internId).map((entry) => `${entry.kind}:${entry.memberId}`);
    expect(kinds.sort()).toEqual(['terminal_attached:member-ada', 'terminal_attached:member-grace', 'terminal_detached:member-ada', 'terminal_detached:member-grace']);
  }, 90_000);

  it('refuses sizes out of range and unknown interns', async () => {
    expect(await refusalOf(client.openTerminal({ internId: randomUUID(), memberId: 'm', cols: 0, rows: 24 }))).toBe('invalid_body');
    expect(await refusalOf(client.openTerminal({ internId: randomUUID(), memberId: 'm', cols: 80, rows: 100_000 }))).toBe('invalid_body');
    expect(await refusalOf(open(randomUUID()))).toBe('intern_not_running');
  });

  it('closes a busy terminal whose gateway fell silent (no heartbeat for TERMINAL_LIVENESS_MS)', async () => {
    const internId = await bootIntern();
    const terminalId = randomUUID();
    // A gateway that opens a terminal, starts a ticking loop (output keeps it from idling), then vanishes.
    let text = '';
    let closedWith: string | null = null;
    const output = nc.subscribe(subjects.runs.terminalOutput(terminalId), {
      callback: (error, msg) => {
        if (error) return;
        if (msg.headers?.get(TERMINAL_OP_HEADER) === TERMINAL_OUTPUT_OPS.closed) closedWith = msg.json<{ reason: string }>().reason;
        else text += msg.string();
      },
    });
    const request: TerminalOpenRequest = { terminalId, internId, memberId: 'member-ada', cols: 80, rows: 24, correlationId: randomUUID() };
    await rpc.request(subjects.runs.terminalOpen, request, { timeoutMs: 30_000 });
    nc.publish(subjects.runs.terminalInput(terminalId), 'echo "uid=$(id -u)"; while :; do echo tick; sleep 1; done\r', { headers: terminalHeaders(TERMINAL_INPUT_OPS.input) });
    const startedAt = Date.now();
    while (closedWith === null && Date.now() - startedAt < TERMINAL_LIVENESS_MS + 20_000) await sleep(100);
    output.unsubscribe();
    expect(closedWith).toBe('gateway_lost');
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(TERMINAL_LIVENESS_MS - 1000);
    expect(text.match(/tick/g)?.length ?? 0).toBeGreaterThan(5);
    await noProcessesOf(Number(/uid=(\d+)/.exec(text)?.[1]));
    expect(await rowsOf(internId)).toBe(0);
  }, 60_000);

  it('refuses terminals on a runs service without the sandbox (RUNTIME_SANDBOX=off), rather than open a host shell', async () => {
    const offPrefix = testNatsPrefix();
    const unsandboxed = await bootstrapService({
      service: 'runs',
      schema: 'runs',
      migrations: RUNS_MIGRATIONS,
      port: (config) => config.runsPort,
      rootModule: (deps) => RunsModule.forRoot(deps),
      env: { DATABASE_URL: db.url, NATS_PREFIX: offPrefix, RUNS_PORT: '0', DATA_DIR: join(root, 'data-off'), ARCHIVE_DIR: join(root, 'archive-off'), RUNTIME_SANDBOX: 'off' },
      handleSignals: false,
      logger: false,
    });
    try {
      const offClient = new TerminalClient(nc, subjectsFor(offPrefix).runs);
      const failure = await offClient.openTerminal({ internId: randomUUID(), memberId: 'member-ada', cols: 80, rows: 24 }).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DomainError);
      expect((failure as DomainError).reason).toBe('configuration_error');
      expect((failure as DomainError).message).toContain('RUNTIME_SANDBOX=off');
    } finally {
      await unsandboxed.close();
    }
  }, 60_000);
});
