import type { LogLevel } from '@nestjs/common';
import { LOG_LEVEL_NAMES, type LogLevelName } from '@interns/contracts';

/** Nest's level names beside pino's (which LOG_LEVEL uses), most severe first. */
const NEST_LEVEL_OF: Record<Exclude<LogLevelName, 'silent'>, LogLevel> = {
  fatal: 'fatal',
  error: 'error',
  warn: 'warn',
  info: 'log',
  debug: 'debug',
  trace: 'verbose',
};

/** How severe a level is: its place in LOG_LEVEL_NAMES (0 is `silent`, beyond everything). */
function rank(level: LogLevelName): number {
  return LOG_LEVEL_NAMES.indexOf(level);
}

/** The Nest levels a LOG_LEVEL lets through: what `Logger.isLevelEnabled` answers by. */
export function nestLevelsFor(level: LogLevelName): LogLevel[] {
  const levels: LogLevel[] = [];
  for (const [name, nest] of Object.entries(NEST_LEVEL_OF) as [LogLevelName, LogLevel][]) {
    if (rank(name) <= rank(level)) levels.push(nest);
  }
  return levels;
}

/** The threshold matching a set of Nest levels (`app.useLogger(['error', 'warn'])`): its least severe member. */
export function logLevelForNest(levels: readonly LogLevel[]): LogLevelName {
  let least: LogLevelName = 'silent';
  for (const [name, nest] of Object.entries(NEST_LEVEL_OF) as [LogLevelName, LogLevel][]) {
    if (levels.includes(nest) && rank(name) > rank(least)) least = name;
  }
  return least;
}

/**
 * Nest's own start-up chatter (module wiring, one line per mapped route, "successfully started"): written at
 * `debug` instead of `info`, so a service's `info` lines are the ones about its work. Its warnings and errors keep
 * their level.
 */
export const NEST_FRAMEWORK_CONTEXTS: ReadonlySet<string> = new Set([
  'NestFactory',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestApplication',
  'NestApplicationContext',
  'NestMicroservice',
  'MiddlewareModule',
  'LegacyRouteConverter',
]);

/** The level a line is written at: a framework context's `info` becomes `debug`. */
export function effectiveLevel<L extends string>(level: L, context: string | undefined): L | 'debug' {
  return level === 'info' && context !== undefined && NEST_FRAMEWORK_CONTEXTS.has(context) ? 'debug' : level;
}
