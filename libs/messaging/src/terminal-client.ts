import { randomUUID } from 'node:crypto';
import { headers as natsHeaders, RequestError, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import {
  DomainError,
  TERMINAL_CLOSE_REASONS,
  TERMINAL_HEARTBEAT_MS,
  TERMINAL_INPUT_OPS,
  TERMINAL_LIVENESS_MS,
  TERMINAL_OP_HEADER,
  TERMINAL_OUTPUT_OPS,
  TERMINAL_WINDOW_BYTES,
  terminalSizeOf,
  type Subjects,
  type TerminalCloseReason,
  type TerminalOpenReply,
  type TerminalOpenRequest,
} from '@interns/contracts';
import { RemoteServiceError, RpcClient } from './rpc-client';

/** Opening builds a sandbox (and may wait for the egress proxy): well inside a WebSocket upgrade's patience. */
const OPEN_TIMEOUT_MS = 30_000;
/** Closing waits for the shell and everything it started to be gone. */
const CLOSE_TIMEOUT_MS = 10_000;
/** Keystrokes and pastes cross in messages of at most this much (NATS carries 1 MiB by default). */
const INPUT_CHUNK_BYTES = 64 * 1024;
/** Credit is returned once this much was flushed (or everything received so far): not one message per frame. */
const ACK_STEP_BYTES = TERMINAL_WINDOW_BYTES / 8;

/** A message of the terminal protocol: its op in the header. */
export function terminalHeaders(op: string): MsgHdrs {
  const headers = natsHeaders();
  headers.set(TERMINAL_OP_HEADER, op);
  return headers;
}

export interface OpenTerminalOptions {
  internId: string;
  /** The daemon token's member (recorded in the intern's audit). */
  memberId: string;
  cols: number;
  rows: number;
  correlationId?: string;
}

/**
 * The gateway's end of one terminal (interface section 20): what the door's WebSocket handler pipes frames into.
 * Output is held back by the runs side once TERMINAL_WINDOW_BYTES are not `flushed`, so a client that does not read
 * costs at most that much, here and there.
 */
export interface Terminal {
  readonly id: string;
  /** The shell's output, in order; bytes that came before the first listener are handed to it. */
  onOutput(listener: (bytes: Buffer) => void): void;
  /** Keystrokes (a binary frame as it came). */
  write(bytes: Uint8Array | string): void;
  /** A resize frame; out-of-range sizes throw DomainError('invalid_body'). */
  resize(cols: number, rows: number): void;
  /** `bytes` more output have left for the client (say, from `ws.send`'s callback): credit for as much more. */
  flushed(bytes: number): void;
  /** Ends the shell and everything it started; settles once the runs side confirms (or could not be reached). */
  close(): Promise<void>;
  /** Called once, with why the terminal closed (whichever side closed it). */
  onClose(listener: (reason: TerminalCloseReason) => void): void;
  /** Settles with the same reason. */
  readonly closed: Promise<TerminalCloseReason>;
}

export interface TerminalClientOptions {
  heartbeatMs?: number;
  livenessMs?: number;
}

/**
 * Opens terminals on running interns through any runs replica (`runs.cmd.terminal-open`), then speaks to the
 * replica holding each one on its own subjects (docs/architecture.md, "Terminals").
 */
export class TerminalClient {
  private readonly rpc: RpcClient;
  private readonly heartbeatMs: number;
  private readonly livenessMs: number;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects['runs'],
    options: TerminalClientOptions = {},
  ) {
    this.rpc = new RpcClient(nc);
    this.heartbeatMs = options.heartbeatMs ?? TERMINAL_HEARTBEAT_MS;
    this.livenessMs = options.livenessMs ?? TERMINAL_LIVENESS_MS;
  }

  /**
   * A terminal on the intern, or the refusal as a DomainError to map to the envelope: 409 `limit_reached` (the
   * intern has TERMINALS_PER_INTERN), 409 `intern_not_running`, 400 `invalid_body` (size), 500 when no sandbox or
   * no runs replica could open it.
   */
  async openTerminal(options: OpenTerminalOptions): Promise<Terminal> {
    const { cols, rows } = terminalSizeOf({ cols: options.cols, rows: options.rows });
    const terminalId = randomUUID();
    const link = new TerminalLink(this.nc, this.subjects, terminalId, this.heartbeatMs, this.livenessMs);
    const request: TerminalOpenRequest = {
      terminalId,
      internId: options.internId,
      memberId: options.memberId,
      cols,
      rows,
      correlationId: options.correlationId ?? randomUUID(),
    };
    try {
      await this.rpc.request<TerminalOpenReply>(this.subjects.terminalOpen, request, { timeoutMs: OPEN_TIMEOUT_MS, correlationId: request.correlationId });
    } catch (error) {
      link.abandon();
      if (error instanceof RemoteServiceError) throw new DomainError(error.payload.reason, error.payload.message);
      // A replica that timed out may still open it: the close reaches it, or its liveness check ends it.
      link.sendClose();
      throw new DomainError('internal_error', 'no runs replica opened the terminal; try again');
    }
    link.start();
    return link;
  }
}

/** One terminal's subjects, flow control and liveness, on the gateway. */
class TerminalLink implements Terminal {
  readonly closed: Promise<TerminalCloseReason>;
  private readonly output: Subscription;
  private outputListener: ((bytes: Buffer) => void) | null = null;
  /** Output that arrived before the listener (bounded by the window: nothing more is sent unacknowledged). */
  private early: Buffer[] = [];
  private readonly closeListeners: ((reason: TerminalCloseReason) => void)[] = [];
  private resolveClosed!: (reason: TerminalCloseReason) => void;
  /** Why it ended, once it did. */
  private ended: TerminalCloseReason | null = null;
  private closing: Promise<void> | null = null;
  private received = 0;
  private flushedTotal = 0;
  private acked = 0;
  private heartbeat: NodeJS.Timeout | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subjects: Subjects['runs'],
    readonly id: string,
    private readonly heartbeatMs: number,
    private readonly livenessMs: number,
  ) {
    this.closed = new Promise((resolve) => (this.resolveClosed = resolve));
    this.output = nc.subscribe(subjects.terminalOutput(id), { callback: (error, msg) => (error ? undefined : this.fromRuns(msg)) });
  }

  start(): void {
    this.heartbeat = setTimeout(() => void this.beat(), this.heartbeatMs);
  }

  /** The open failed: nothing was handed out, nobody to tell. */
  abandon(): void {
    this.ended = 'client_closed';
    this.output.unsubscribe();
  }

  onOutput(listener: (bytes: Buffer) => void): void {
    this.outputListener = listener;
    const early = this.early;
    this.early = [];
    for (const bytes of early) listener(bytes);
  }

  onClose(listener: (reason: TerminalCloseReason) => void): void {
    if (this.ended !== null) listener(this.ended);
    else this.closeListeners.push(listener);
  }

  write(bytes: Uint8Array | string): void {
    if (!this.open) return;
    const data = typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes;
    for (let offset = 0; offset < data.byteLength; offset += INPUT_CHUNK_BYTES) {
      this.send(TERMINAL_INPUT_OPS.input, data.subarray(offset, offset + INPUT_CHUNK_BYTES));
    }
  }

  resize(cols: number, rows: number): void {
    const size = terminalSizeOf({ cols, rows });
    if (this.open) this.send(TERMINAL_INPUT_OPS.resize, JSON.stringify(size));
  }

  flushed(bytes: number): void {
    if (!this.open || !Number.isSafeInteger(bytes) || bytes <= 0) return;
    this.flushedTotal = Math.min(this.flushedTotal + bytes, this.received);
    if (this.flushedTotal - this.acked >= ACK_STEP_BYTES || this.flushedTotal === this.received) {
      this.acked = this.flushedTotal;
      this.send(TERMINAL_INPUT_OPS.ack, JSON.stringify({ flushed: this.acked }));
    }
  }

  close(): Promise<void> {
    if (this.ended !== null) return Promise.resolve();
    this.closing ??= (async () => {
      try {
        await this.nc.request(this.subjects.terminalInput(this.id), JSON.stringify({ reason: 'client_closed' }), {
          timeout: CLOSE_TIMEOUT_MS,
          headers: terminalHeaders(TERMINAL_INPUT_OPS.close),
        });
      } catch {
        // Gone already (no responders), or slow: its liveness check ends it without us.
      }
      this.finish('client_closed');
    })();
    return this.closing;
  }

  /** Best effort, for a replica that may hold the terminal without having answered. */
  sendClose(): void {
    this.nc.publish(this.subjects.terminalInput(this.id), JSON.stringify({ reason: 'client_closed' }), { headers: terminalHeaders(TERMINAL_INPUT_OPS.close) });
  }

  private get open(): boolean {
    return this.ended === null && this.closing === null;
  }

  private fromRuns(msg: Msg): void {
    if (this.ended !== null) return;
    const op = msg.headers?.get(TERMINAL_OP_HEADER);
    if (op === TERMINAL_OUTPUT_OPS.output) {
      const bytes = Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength);
      this.received += bytes.byteLength;
      if (this.outputListener === null) this.early.push(bytes);
      else this.outputListener(bytes);
    } else if (op === TERMINAL_OUTPUT_OPS.closed) {
      const reason = (msg.json<{ reason?: string }>().reason ?? '') as TerminalCloseReason;
      this.finish(TERMINAL_CLOSE_REASONS.includes(reason) ? reason : 'exited');
    }
  }

  /** One heartbeat in flight at a time: its answer proves the replica still holds the terminal. */
  private async beat(): Promise<void> {
    if (this.ended !== null) return;
    try {
      await this.nc.request(this.subjects.terminalInput(this.id), new Uint8Array(0), {
        timeout: this.livenessMs,
        headers: terminalHeaders(TERMINAL_INPUT_OPS.heartbeat),
      });
    } catch (error) {
      if (this.ended !== null) return;
      // No responders: the replica is gone (or closed it and its `closed` is still on its way); no answer: it froze.
      if (!(error instanceof RequestError && error.isNoResponders())) this.sendClose();
      this.finish('runs_lost');
      return;
    }
    if (this.ended === null) this.heartbeat = setTimeout(() => void this.beat(), this.heartbeatMs);
  }

  private send(op: string, data: Uint8Array | string): void {
    this.nc.publish(this.subjects.terminalInput(this.id), data, { headers: terminalHeaders(op) });
  }

  private finish(reason: TerminalCloseReason): void {
    if (this.ended !== null) return;
    this.ended = reason;
    clearTimeout(this.heartbeat);
    this.output.unsubscribe();
    this.early = [];
    this.resolveClosed(reason);
    for (const listener of this.closeListeners.splice(0)) listener(reason);
  }
}
