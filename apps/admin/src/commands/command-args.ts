import { parseArgs, ParseArgsConfig } from 'node:util';
import { isUuid } from '@interns/contracts';
import { UsageError } from '../admin.errors';

type FlagOptions = Record<string, { type: 'string' } | { type: 'boolean' }>;
type FlagValues<T extends FlagOptions> = { [K in keyof T]?: T[K] extends { type: 'boolean' } ? boolean : string };

/** node:util parseArgs in strict mode, with its errors turned into one-line usage errors. */
export function parseFlags<T extends FlagOptions>(
  command: string,
  args: string[],
  options: T,
  allowPositionals = false,
): { values: FlagValues<T>; positionals: string[] } {
  const config: ParseArgsConfig = { args, options, strict: true, allowPositionals };
  try {
    const { values, positionals } = parseArgs(config);
    return { values: values as FlagValues<T>, positionals };
  } catch (error) {
    const first = (error as Error).message.split('\n')[0] ?? 'invalid arguments';
    throw new UsageError(`${command}: ${first}`);
  }
}

export function requireFlag(command: string, name: string, value: string | undefined, what: string): string {
  if (value === undefined) throw new UsageError(`${command}: missing --${name} <${what}>`);
  return value;
}

export function requireUuidFlag(command: string, name: string, value: string | undefined): string {
  const text = requireFlag(command, name, value, 'uuid');
  if (!isUuid(text)) throw new UsageError(`${command}: --${name} must be a uuid, got "${text}"`);
  return text.toLowerCase();
}
