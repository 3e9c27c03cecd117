import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { Logger } from '@nestjs/common';
import {
  TERMINAL_CLOSE_REASONS,
  TERMINAL_INPUT_OPS,
  TERMINAL_OP_HEADER,
  TERMINAL_OUTPUT_OPS,
  terminalSizeOf,
  type Subjects,
  type TerminalCloseReason,
} from '@interns/contracts';
import { terminalHeaders } from '@interns/messaging';
import type { PtyProcess } from '../runtime/shell/sandbox-pty';

export interface LiveTerminalTimings {
  /** Output sent and not yet acknowledged beyond which the shell's terminal is paused. */
  windowBytes: number;
  /** How often the gateway's silence is checked. */
  heartbeatMs: number;
  /** Silence of the gateway after which the terminal closes (`gateway_lost`). */
  livenessMs: number;
  /** TERMINAL_IDLE_MS: neither input nor output this long closes it (`idle`). */
  idleMs: number;
}

/** Where output stands: what was sent, what the client took, whether the shell is held back. */
export interface TerminalFlow {
  sent: number;
  flushed: number;
  paused: boolean;
}

const REPLY = JSON.stringify({});

/**
 * One terminal held by this replica: its input subject served, its pty's output sent on its output subject under a
 * credit window (the pty paused while the client is TERMINAL_WINDOW_BYTES behind), closed when idle, when the gateway
 * falls silent, when the shell exits, or when asked. Closing kills the sandbox with everything in it first, then
 * tells the gateway, then `onClosed` (the host's bookkeeping).
 */
export class LiveTerminal {
  /** Its attach is in the intern's audit, so its detach must be too. */
  audited = false;
  private readonly logger = new Logger('Terminals');
  private readonly subscription: Subscription;
  private pty: PtyProcess | null = null;
  private sent = 0;
  private flushed = 0;
  private paused = false;
  private lastActivity = Date.now();
  private lastHeard = Date.now();
  private idleTimer: NodeJS.Timeout | undefined;
  private livenessTimer: NodeJS.Timeout | undefined;
  private closing: Promise<void> | null = null;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects['runs'],
    readonly id: string,
    readonly internId: string,
    readonly memberId: string,
    private readonly timings: LiveTerminalTimings,
    private readonly onClosed: (terminal: LiveTerminal, reason: TerminalCloseReason) => Promise<void>,
  ) {
    this.subscription = nc.subscribe(subjects.terminalInput(id), { callback: (error, msg) => (error ? undefined : this.fromGateway(msg)) });
  }

  get flow(): TerminalFlow {
    return { sent: this.sent, flushed: this.flushed, paused: this.paused };
  }

  /** Starts moving the pty's bytes; false (and the pty killed) when the terminal was closed while it started. */
  async attach(pty: PtyProcess): Promise<boolean> {
    if (this.closing !== null) {
      pty.kill();
      await pty.finished;
      return false;
    }
    this.pty = pty;
    pty.onData((data) => this.toGateway(data));
    void pty.finished.then(() => this.close('exited'));
    this.lastActivity = Date.now();
    this.lastHeard = Date.now();
    this.idleTimer = setTimeout(() => this.checkIdle(), this.timings.idleMs);
    this.livenessTimer = setInterval(() => {
      if (Date.now() - this.lastHeard > this.timings.livenessMs) void this.close('gateway_lost');
    }, this.timings.heartbeatMs);
    return true;
  }

  /** Settles once the sandbox is gone, the gateway told, and the host's bookkeeping done; safe to repeat. */
  close(reason: TerminalCloseReason): Promise<void> {
    this.closing ??= (async () => {
      clearTimeout(this.idleTimer);
      clearInterval(this.livenessTimer);
      if (this.pty !== null) {
        this.pty.kill();
        await this.pty.finished;
      }
      this.nc.publish(this.subjects.terminalOutput(this.id), JSON.stringify({ reason }), { headers: terminalHeaders(TERMINAL_OUTPUT_OPS.closed) });
      this.subscription.unsubscribe();
      await this.onClosed(this, reason).catch((error: unknown) => this.logger.error(`terminal ${this.id} closed, but its bookkeeping failed: ${(error as Error).message}`));
    })();
    return this.closing;
  }

  private toGateway(data: Buffer): void {
    if (this.closing !== null) return;
    this.lastActivity = Date.now();
    this.sent += data.byteLength;
    this.nc.publish(this.subjects.terminalOutput(this.id), data, { headers: terminalHeaders(TERMINAL_OUTPUT_OPS.output) });
    if (!this.paused && this.sent - this.flushed >= this.timings.windowBytes) {
      // The kernel's pty buffer fills next, and the shell blocks on its writes: nothing piles up here.
      this.paused = true;
      this.pty?.pause();
    }
  }

  private fromGateway(msg: Msg): void {
    const op = msg.headers?.get(TERMINAL_OP_HEADER);
    if (op === TERMINAL_INPUT_OPS.probe) {
      msg.respond(REPLY);
      return;
    }
    if (op === TERMINAL_INPUT_OPS.close) {
      void this.close(closeReasonOf(msg)).then(() => msg.respond(REPLY));
      return;
    }
    this.lastHeard = Date.now();
    switch (op) {
      case TERMINAL_INPUT_OPS.heartbeat:
        msg.respond(REPLY);
        return;
      case TERMINAL_INPUT_OPS.input:
        this.lastActivity = Date.now();
        this.pty?.write(Buffer.from(msg.data));
        return;
      case TERMINAL_INPUT_OPS.resize:
        try {
          const { cols, rows } = terminalSizeOf(msg.json());
          this.pty?.resize(cols, rows);
        } catch {
          // The gateway checks sizes before sending them; a bad one changes nothing.
        }
        return;
      case TERMINAL_INPUT_OPS.ack:
        this.credit(msg.json<{ flushed?: unknown }>().flushed);
        return;
      default:
        return;
    }
  }

  /** `flushed` is the client's running total: repeated or reordered acknowledgements never give credit twice. */
  private credit(flushed: unknown): void {
    if (typeof flushed !== 'number' || !Number.isSafeInteger(flushed)) return;
    this.flushed = Math.max(this.flushed, Math.min(flushed, this.sent));
    if (this.paused && this.sent - this.flushed < this.timings.windowBytes) {
      this.paused = false;
      this.pty?.resume();
    }
  }

  private checkIdle(): void {
    const quiet = Date.now() - this.lastActivity;
    if (quiet >= this.timings.idleMs) void this.close('idle');
    else this.idleTimer = setTimeout(() => this.checkIdle(), this.timings.idleMs - quiet);
  }
}

function closeReasonOf(msg: Msg): TerminalCloseReason {
  try {
    const reason = msg.json<{ reason?: string }>().reason as TerminalCloseReason;
    return TERMINAL_CLOSE_REASONS.includes(reason) ? reason : 'client_closed';
  } catch {
    return 'client_closed';
  }
}
