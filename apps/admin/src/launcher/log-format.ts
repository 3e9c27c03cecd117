/**
 * How `npm start` shows the services' logs. The services always write JSON lines (what Kubernetes, compose
 * and the tests read); on a terminal the launcher, which owns their stdout, turns each line into a short
 * human-readable one with pino-pretty. Doing it in the launcher keeps the services with one output format
 * and pino-pretty out of their images.
 */
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { isColorSupported, prettyFactory } from 'pino-pretty';

export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** LOG_FORMAT (json or pretty) when set, else pretty when the launcher's stdout is a terminal and JSON otherwise. */
export function chooseLogFormat(env: NodeJS.ProcessEnv, stdoutIsTerminal: boolean): LogFormat {
  const chosen = env.LOG_FORMAT?.trim().toLowerCase();
  if (chosen === undefined || chosen === '') return stdoutIsTerminal ? 'pretty' : 'json';
  if (!(LOG_FORMATS as readonly string[]).includes(chosen)) throw new Error(`LOG_FORMAT must be one of ${LOG_FORMATS.join(', ')}, got "${env.LOG_FORMAT}"`);
  return chosen as LogFormat;
}

/**
 * One JSON log line as `[12:00:00.000] INFO: gateway [Bootstrap] listening {"correlation_id":...}`, an error's
 * stack on the lines below; a line that is not JSON is passed through.
 */
export function prettyLogLine(colorize: boolean): (line: string) => string {
  return prettyFactory({
    colorize,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname,service,context',
    messageFormat: (log, messageKey) => {
      // A service's own failures are logged with its name as the context: said once is enough.
      const context = typeof log.context === 'string' && log.context !== log.service ? ` [${log.context}]` : '';
      return `${String(log.service ?? '')}${context} ${String(log[messageKey] ?? '')}`;
    },
  });
}

/** Colors only on a terminal that takes them (NO_COLOR, TERM=dumb: none). */
export function colorsFor(stdoutIsTerminal: boolean): boolean {
  return stdoutIsTerminal && isColorSupported;
}

/** Writes each line of `input`, prettified, to `output`; settles when `input` ends. */
export function prettifyLines(input: Readable, output: Writable, colorize: boolean): Promise<void> {
  const pretty = prettyLogLine(colorize);
  const lines = createInterface({ input, crlfDelay: Infinity });
  lines.on('line', (line) => output.write(pretty(line)));
  return new Promise((done) => lines.once('close', done));
}
