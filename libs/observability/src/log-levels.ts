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
