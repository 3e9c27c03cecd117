import { hostname } from 'node:os';
import { Logger, type LoggerService, type LogLevel } from '@nestjs/common';
import pino from 'pino';
import type { LogLevelName } from '@interns/contracts';
import { effectiveLevel, logLevelForNest, nestLevelsFor } from './log-levels';
import { CREDENTIAL_FIELD_NAMES, LOG_REDACT_PATHS, REDACTED } from './log-redaction';
import { entryFromNestArguments } from './nest-log-arguments';
import { currentCorrelationId } from './request-context';
import { activeTraceIds } from './tracing';

export interface JsonLoggerOptions {
  /** Written on every line as `service`. */
  service: string;
  /** Default `info`. */
  level?: LogLevelName;
  /** Default stdout. */
  destination?: pino.DestinationStream;
}

type PinoLevel = Exclude<LogLevelName, 'silent'>;

/** What the request being handled adds to every line written while it is. */
function requestFields(): Record<string, string> {
  const correlationId = currentCorrelationId();
  const traceIds = activeTraceIds();
  if (correlationId === undefined) return traceIds ?? {};
  return traceIds === undefined ? { correlation_id: correlationId } : { correlation_id: correlationId, ...traceIds };
}

const CREDENTIAL_FIELDS: ReadonlySet<string> = new Set(CREDENTIAL_FIELD_NAMES);

/**
 * Whether pino's redaction could change a line: only a credential-named field or a value it walks into (an
 * object or an array) can be censored. A flat line (strings, numbers, booleans, null) is written the same bytes with or
 * without it; a string (the message included) that is not well-formed UTF-16 is left to the redacting path,
 * which escapes lone surrogates as JSON.stringify does, where pino's own string writer would not.
 */
function mayNeedRedaction(line: Record<string, unknown>, msg: string | undefined): boolean {
  if (msg !== undefined && !msg.isWellFormed()) return true;
  for (const key in line) {
    if (CREDENTIAL_FIELDS.has(key)) return true;
    const value = line[key];
    const type = typeof value;
    if (type === 'string') {
      if (!(value as string).isWellFormed()) return true;
    } else if (value !== null && type !== 'number' && type !== 'boolean' && type !== 'undefined') return true;
  }
  return false;
}

/**
 * Nest's LoggerService on pino: one JSON object per line (`time`, `level`, `service`, `context`, `msg`,
 * `correlation_id` while a request is handled, `err` with its stack); credential fields are `[Redacted]`
 * (log-redaction.ts); Nest's start-up chatter is `debug` (NEST_FRAMEWORK_CONTEXTS). Installed, it is what every
 * `new Logger(context)` in the process writes through.
 */
export class JsonLogger implements LoggerService {
  private static installed: JsonLogger | null = null;
  /** Writes flat lines (mayNeedRedaction false): pino's redaction walks ~150 paths per field, a fifth of the gateway's CPU per request line. */
  private readonly pino: pino.Logger;
  /** Everything else. Credentials never reach a log line, whoever logs the object that holds them. Same stream, base and format. */
  private readonly redacting: pino.Logger;

  constructor(readonly options: JsonLoggerOptions) {
    this.pino = pino(
      {
        level: options.level ?? 'info',
        base: { service: options.service, pid: process.pid, hostname: hostname() },
        timestamp: pino.stdTimeFunctions.isoTime,
        formatters: { level: (label) => ({ level: label }) },
        mixin: requestFields,
      },
      options.destination,
    );
    this.redacting = this.pino.child({}, { redact: { paths: LOG_REDACT_PATHS, censor: REDACTED } });
  }

  /**
   * Makes the process's JSON logger the one behind every Nest `Logger` and lets `Logger.isLevelEnabled`
   * answer by its level. The first call creates it; later calls (same service) only change the level.
   */
  static install(options: { service: string; level?: LogLevelName }): JsonLogger {
    let logger = JsonLogger.installed;
    if (logger === null || logger.options.service !== options.service) {
      logger = new JsonLogger({ service: options.service });
      JsonLogger.installed = logger;
    }
    Logger.overrideLogger(logger);
    // An array sets Nest's level list and calls setLogLevels below, so both agree.
    Logger.overrideLogger(nestLevelsFor(options.level ?? logger.level));
    return logger;
  }

  get level(): LogLevelName {
    return this.pino.level as LogLevelName;
  }

  /** Nest's way to change levels (`app.useLogger([...])`, `Logger.overrideLogger([...])`). */
  setLogLevels(levels: LogLevel[]): void {
    const level = logLevelForNest(levels);
    this.pino.level = level;
    this.redacting.level = level;
  }

  log(message: unknown, ...optionalParams: unknown[]): void {
    this.write('info', message, optionalParams, false);
  }

  error(message: unknown, ...optionalParams: unknown[]): void {
    this.write('error', message, optionalParams, true);
  }

  warn(message: unknown, ...optionalParams: unknown[]): void {
    this.write('warn', message, optionalParams, false);
  }

  debug(message: unknown, ...optionalParams: unknown[]): void {
    this.write('debug', message, optionalParams, false);
  }

  verbose(message: unknown, ...optionalParams: unknown[]): void {
    this.write('trace', message, optionalParams, false);
  }

  fatal(message: unknown, ...optionalParams: unknown[]): void {
    this.write('fatal', message, optionalParams, true);
  }

  private write(requested: PinoLevel, message: unknown, optionalParams: unknown[], takesStack: boolean): void {
    if (!this.pino.isLevelEnabled(requested)) return;
    const { msg, context, err, fields } = entryFromNestArguments(message, optionalParams, takesStack);
    const level = effectiveLevel(requested, context);
    if (level !== requested && !this.pino.isLevelEnabled(level)) return;
    const line: Record<string, unknown> = { ...fields };
    if (context !== undefined) line.context = context;
    if (err !== undefined) line.err = err;
    // The mixin's fields are ids (correlation, trace), never credentials, decoded from headers so well-formed.
    (mayNeedRedaction(line, msg) ? this.redacting : this.pino)[level](line, msg);
  }
}
