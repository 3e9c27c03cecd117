import { randomUUID } from 'node:crypto';
import { RequestError, type NatsConnection } from '@nats-io/transport-node';
import { Logger } from '@nestjs/common';
import {
  DomainError,
  isUuid,
  TERMINAL_HEARTBEAT_MS,
  TERMINAL_INPUT_OPS,
  TERMINAL_LIVENESS_MS,
  TERMINAL_WINDOW_BYTES,
  terminalSizeOf,
  type RuntimeHealthReply,
  type Subjects,
  type TerminalCloseReason,
  type TerminalOpenReply,
  type TerminalOpenRequest,
  type TerminalSize,
} from '@interns/contracts';
import { terminalHeaders } from '@interns/messaging';
import type { PtyProcess } from '../runtime/shell/sandbox-pty';
import { LiveTerminal, type LiveTerminalTimings, type TerminalFlow } from './live-terminal';
import type { TerminalAudit } from './terminal-audit';
import type { TerminalSessionRow, TerminalSessions } from './terminal-sessions';

/** A replica holding a terminal answers a probe at once; one that does not within this is busy, not dead. */
const PROBE_TIMEOUT_MS = 2_000;
/** Closing another replica's terminal waits for its sandbox to be gone. */
const REMOTE_CLOSE_TIMEOUT_MS = 10_000;

/** Where a terminal's shell runs: the intern's sandbox (BubblewrapShell). */
export interface TerminalSandbox {
  openTerminal(internId: string, workspace: string, size: TerminalSize): Promise<PtyProcess>;
}

/** The intern's runtime on this host: running or not, and its workspace with the disk attached. */
export interface TerminalRuntime {
  health(internId: string): Promise<RuntimeHealthReply>;
  attachedWorkspace(internId: string): Promise<string | null>;
}

export interface TerminalHostOptions extends Partial<Omit<LiveTerminalTimings, 'idleMs'>> {
  /** TERMINALS_PER_INTERN, across replicas. */
  perIntern: number;
  /** TERMINAL_IDLE_MS. */
  idleMs: number;
}

/**
 * Terminals attached to running interns (interface section 20), opened by any replica and held by the one that opened
 * them: the cap counted in PostgreSQL, the intern's runtime running, the shell in its sandbox (null: RUNTIME_SANDBOX=off,
 * and a terminal is refused rather than opened on the host), attach and detach in the intern's audit.
 */
export class TerminalHost {
  private readonly logger = new Logger('Terminals');
  private readonly live = new Map<string, LiveTerminal>();
  private readonly timings: LiveTerminalTimings;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects['runs'],
    private readonly sessions: TerminalSessions,
    private readonly audit: TerminalAudit,
    private readonly runtime: TerminalRuntime,
    private readonly sandbox: TerminalSandbox | null,
    private readonly options: TerminalHostOptions,
  ) {
    this.timings = {
      windowBytes: options.windowBytes ?? TERMINAL_WINDOW_BYTES,
      heartbeatMs: options.heartbeatMs ?? TERMINAL_HEARTBEAT_MS,
      livenessMs: options.livenessMs ?? TERMINAL_LIVENESS_MS,
      idleMs: options.idleMs,
    };
  }

  async open(request: TerminalOpenRequest): Promise<TerminalOpenReply> {
    if (this.sandbox === null) {
      throw new DomainError(
        'configuration_error',
        'terminals need the sandbox: this runs service has RUNTIME_SANDBOX=off (development only), where a terminal would be a shell on its host',
      );
    }
    const { terminalId, internId, memberId } = checked(request);
    const size = terminalSizeOf(request);
    if (this.live.has(terminalId)) throw new DomainError('invalid_body', 'a terminal with this id is open already');
    const terminal = new LiveTerminal(this.nc, this.subjects, terminalId, internId, memberId, this.timings, (closed, reason) => this.closed(closed, reason));
    this.live.set(terminalId, terminal);
    try {
      const orphans = await this.sessions.reserve({ id: terminalId, intern_id: internId, member_id: memberId }, this.options.perIntern, (id) => this.held(id));
      await Promise.all(orphans.map((orphan) => this.recordDetach(orphan, request.correlationId)));
      const health = await this.runtime.health(internId);
      if (!health.healthy) throw new DomainError('intern_not_running', `the intern's runtime is not running (${health.detail})`);
      const workspace = await this.runtime.attachedWorkspace(internId);
      if (workspace === null) throw new DomainError('intern_not_running', 'the intern has no workspace disk');
      const pty = await this.sandbox.openTerminal(internId, workspace, size);
      if (!(await terminal.attach(pty))) throw new DomainError('intern_not_running', 'the intern was suspended or deleted while the terminal opened');
      await this.audit.record('terminal_attached', internId, memberId, request.correlationId).catch((error: unknown) => {
        this.logger.error(`the attach of terminal ${terminalId} (intern ${internId}) could not be audited: ${(error as Error).message}`);
        throw new DomainError('internal_error', "the terminal could not be recorded in the intern's audit, so it was not opened; try again");
      });
      terminal.audited = true;
    } catch (error) {
      await terminal.close('client_closed');
      throw error;
    }
    return { terminalId };
  }

  /** Where a terminal held here stands (its flow control), or null. */
  flowOf(terminalId: string): TerminalFlow | null {
    return this.live.get(terminalId)?.flow ?? null;
  }

  /**
   * Suspend and delete: every terminal of the intern closes, on whichever replica holds it (a row nobody holds any
   * more is removed). A replica that does not confirm fails the step, which lifecycle retries.
   */
  async closeIntern(internId: string, reason: TerminalCloseReason): Promise<void> {
    if (!isUuid(internId)) return;
    const id = internId.toLowerCase();
    const local = [...this.live.values()].filter((terminal) => terminal.internId === id);
    const rows = (await this.sessions.ofIntern(id)).filter((row) => !this.live.has(row.id));
    await Promise.all([...local.map((terminal) => terminal.close(reason)), ...rows.map((row) => this.closeRemote(row, reason))]);
  }

  /** Shutdown: this replica's terminals close (their clients hear `shutdown`). */
  async closeAll(): Promise<void> {
    await Promise.all([...this.live.values()].map((terminal) => terminal.close('shutdown')));
  }

  private async closeRemote(row: TerminalSessionRow, reason: TerminalCloseReason): Promise<void> {
    try {
      await this.nc.request(this.subjects.terminalInput(row.id), JSON.stringify({ reason }), { timeout: REMOTE_CLOSE_TIMEOUT_MS, headers: terminalHeaders(TERMINAL_INPUT_OPS.close) });
    } catch (error) {
      if (!(error instanceof RequestError && error.isNoResponders())) throw error;
      // Its replica died with it (and its sandbox with the replica: --die-with-parent).
      if (await this.sessions.release(row.id)) await this.recordDetach(row, randomUUID());
    }
  }

  /** Whether some replica still holds the terminal: a timeout counts as held (a busy replica is not a dead one). */
  private async held(terminalId: string): Promise<boolean> {
    if (this.live.has(terminalId)) return true;
    try {
      await this.nc.request(this.subjects.terminalInput(terminalId), new Uint8Array(0), { timeout: PROBE_TIMEOUT_MS, headers: terminalHeaders(TERMINAL_INPUT_OPS.probe) });
      return true;
    } catch (error) {
      return !(error instanceof RequestError && error.isNoResponders());
    }
  }

  private async closed(terminal: LiveTerminal, reason: TerminalCloseReason): Promise<void> {
    this.live.delete(terminal.id);
    const released = await this.sessions.release(terminal.id);
    if (released && terminal.audited) await this.recordDetach({ id: terminal.id, intern_id: terminal.internId, member_id: terminal.memberId }, randomUUID());
    this.logger.log(`terminal ${terminal.id} of intern ${terminal.internId} closed: ${reason}`);
  }

  /** The detach's audit is best effort: the terminal is gone either way, and the log says what is missing. */
  private async recordDetach(row: TerminalSessionRow, correlationId: string): Promise<void> {
    await this.audit.record('terminal_detached', row.intern_id, row.member_id, correlationId).catch((error: unknown) => {
      this.logger.error(`the detach of terminal ${row.id} (intern ${row.intern_id}) could not be audited: ${(error as Error).message}`);
    });
  }
}

function checked(request: TerminalOpenRequest): { terminalId: string; internId: string; memberId: string } {
  if (typeof request.terminalId !== 'string' || !isUuid(request.terminalId)) throw new DomainError('invalid_body', 'terminalId must be a uuid');
  if (typeof request.internId !== 'string' || !isUuid(request.internId)) throw new DomainError('not_found', 'intern not found');
  if (typeof request.memberId !== 'string' || request.memberId === '') throw new DomainError('invalid_body', 'memberId is required');
  return { terminalId: request.terminalId.toLowerCase(), internId: request.internId.toLowerCase(), memberId: request.memberId };
}
