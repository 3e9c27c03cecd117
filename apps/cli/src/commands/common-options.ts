import type { Command } from 'commander';

/** `--api` and `--json`, which every command takes. */
export function withCommonOptions(command: Command): Command {
  return command
    .option('--api <url>', 'the API to use (default: INTERNS_API_URL, else the last one logged in to)')
    .option('--json', 'machine output: the API\'s JSON on stdout, errors as the error envelope on stderr');
}

/** A positive integer option value (commander's argParser). */
export function positiveInt(raw: string): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new Error(`not a positive integer: ${raw}`);
  return value;
}
