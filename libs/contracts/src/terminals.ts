/**
 * Terminals attached to a running intern (interface section 20, `GET /api/terminal`): what the gateway and the runs
 * service exchange to open one, and the protocol its bytes then follow over NATS (docs/architecture.md, "Terminals").
 */
import { DomainError } from './errors';

/** The door asks any runs replica to open a terminal for the token's member (`runs.cmd.terminal-open`). */
export interface TerminalOpenRequest {
  /**
   * Chosen by the gateway (a uuid), which listens on the terminal's output subject before asking: the shell's first
   * bytes (its prompt) cannot go out before anyone reads them.
   */
  terminalId: string;
  internId: string;
  /** The daemon token's member: recorded in the intern's audit on attach and detach. */
  memberId: string;
  cols: number;
  rows: number;
  correlationId: string;
}

/** The terminal is open: its bytes travel on `runs.terminal.<id>.in` / `.out`, served by the replica that opened it. */
export interface TerminalOpenReply {
  terminalId: string;
}

/** Header naming what a terminal message is; the body is bytes (input, output) or JSON (the rest). */
export const TERMINAL_OP_HEADER = 'Terminal-Op';

/** Gateway -> runs on `runs.terminal.<id>.in`. */
export const TERMINAL_INPUT_OPS = {
  /** Keystrokes: the body as it came from the client. */
  input: 'input',
  /** `{"cols","rows"}`. */
  resize: 'resize',
  /** `{"flushed":<int>}`: output bytes the client has taken so far, in total (credit for more). */
  ack: 'ack',
  /** A request: the replica answers while it holds the terminal (no responders: it is gone). */
  heartbeat: 'heartbeat',
  /**
   * `{"reason"}` (the client left, or suspend and delete from any replica): a request, answered once the shell and
   * everything it started are gone.
   */
  close: 'close',
  /** Another runs replica asks whether the terminal is still held (no responders: its replica died). */
  probe: 'probe',
} as const;

/** Runs -> gateway on `runs.terminal.<id>.out`. */
export const TERMINAL_OUTPUT_OPS = {
  /** Terminal bytes. */
  output: 'output',
  /** `{"reason"}`: the last message of a terminal. */
  closed: 'closed',
} as const;

/**
 * Output bytes the runs side sends beyond what the client has acknowledged before it pauses the shell's terminal:
 * what a client that does not read costs the platform, at most, per terminal.
 */
export const TERMINAL_WINDOW_BYTES = 256 * 1024;
/** How often the gateway's end proves it is alive (a heartbeat request). */
export const TERMINAL_HEARTBEAT_MS = 5_000;
/** Silence after which either end calls the other gone and closes its side. */
export const TERMINAL_LIVENESS_MS = 15_000;
/** Window sizes a terminal accepts (both dimensions). */
export const TERMINAL_MAX_DIMENSION = 1000;

/** Why a terminal closed, as its gateway end hears it. */
export const TERMINAL_CLOSE_REASONS = [
  /** The client (or the door) closed it. */
  'client_closed',
  /** The shell exited by itself. */
  'exited',
  /** TERMINAL_IDLE_MS without input or output. */
  'idle',
  'intern_suspended',
  'intern_deleted',
  /** The runs side heard nothing from the gateway for TERMINAL_LIVENESS_MS. */
  'gateway_lost',
  /** The gateway's end lost the replica holding the terminal (no answer to its heartbeat). */
  'runs_lost',
  /** The replica holding it shut down. */
  'shutdown',
] as const;
export type TerminalCloseReason = (typeof TERMINAL_CLOSE_REASONS)[number];

export interface TerminalSize {
  cols: number;
  rows: number;
}

/** A window size both ends accept: whole numbers in 1..TERMINAL_MAX_DIMENSION, else 400 `invalid_body`. */
export function terminalSizeOf(value: unknown): TerminalSize {
  const { cols, rows } = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  for (const [name, dimension] of [['cols', cols], ['rows', rows]] as const) {
    if (typeof dimension !== 'number' || !Number.isInteger(dimension) || dimension < 1 || dimension > TERMINAL_MAX_DIMENSION) {
      throw new DomainError('invalid_body', `${name} must be an integer from 1 to ${TERMINAL_MAX_DIMENSION}`);
    }
  }
  return { cols: cols as number, rows: rows as number };
}

/** The intern's audit (interface section 11 `audit`): a terminal attached or detached, recorded by lifecycle for runs. */
export type TerminalAuditKind = 'terminal_attached' | 'terminal_detached';

export interface TerminalAuditRequest {
  kind: TerminalAuditKind;
  internId: string;
  memberId: string;
  /** ISO 8601 UTC with milliseconds. */
  at: string;
  correlationId: string;
}
