/**
 * How `interns` ends: one exit code per kind of failure (documented in docs/cli.md), and the two errors that carry
 * them. An API refusal keeps the envelope it came with, so `--json` can print it exactly as the API answered.
 */
import type { ErrorEnvelope } from '@interns/contracts';

export const EXIT = {
  ok: 0,
  /** The API refused (any envelope not below), a run ended in error, or something else failed. */
  failure: 1,
  /** Bad arguments or options; a name that matches several interns; a prompt needed where there is no terminal. */
  usage: 2,
  /** Not logged in, or the credential was refused (401) or may not do this (403). */
  auth: 3,
  /** 404: the intern, run, file or secret is not there (or not visible to this credential). */
  notFound: 4,
  /** The API could not be reached, or did not answer in time. */
  unreachable: 5,
  /** A run waits for an answer that could not be asked here (no terminal); `chat --run` answers it later. */
  awaitingInput: 6,
  /** Ctrl-C. */
  interrupted: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A failure of the client itself (usage, login, network), with the exit code it ends with. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode,
    /** A short machine-readable name, printed as the reason under `--json`. */
    readonly reason: string,
  ) {
    super(message);
    this.name = 'CliError';
  }

  static usage(message: string): CliError {
    return new CliError(message, EXIT.usage, 'usage');
  }

  /** The envelope-like body `--json` prints on stderr for this error. */
  toEnvelope(): { error: { code: null; message: string; metadata: { reason: string; retryable: boolean } } } {
    return { error: { code: null, message: this.message, metadata: { reason: this.reason, retryable: this.exitCode === EXIT.unreachable } } };
  }
}

/** Reasons of a 403 that mean "this credential cannot do that", not "this thing is refused". */
const CREDENTIAL_REFUSALS = new Set(['forbidden', 'personal_identity_required', 'insufficient_scope']);

/** An answer of the API outside 2xx, with its envelope when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly envelope: ErrorEnvelope | null,
    /** What to print when the answer had no envelope (a proxy's page, say). */
    fallbackMessage: string,
  ) {
    super(envelope?.error.message ?? fallbackMessage);
    this.name = 'ApiError';
  }

  get reason(): string | null {
    return this.envelope?.error.metadata?.reason ?? null;
  }

  get exitCode(): ExitCode {
    if (this.status === 401) return EXIT.auth;
    if (this.status === 403 && CREDENTIAL_REFUSALS.has(this.reason ?? '')) return EXIT.auth;
    if (this.status === 404) return EXIT.notFound;
    return EXIT.failure;
  }

  toEnvelope(): ErrorEnvelope | { error: { code: number; message: string } } {
    return this.envelope ?? { error: { code: this.status, message: this.message } };
  }
}

/** Whether `value` looks like the API's error envelope. */
export function isErrorEnvelope(value: unknown): value is ErrorEnvelope {
  const error = (value as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return typeof error === 'object' && error !== null && typeof error.code === 'number' && typeof error.message === 'string';
}
