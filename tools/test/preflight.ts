/**
 * Jest's globalSetup. The tests run the real shell sandbox, so the tools it is built from must be installed
 * besides Node.js, PostgreSQL and NATS (CONTRACT section 17). When one is missing the run stops before any
 * test, with one line per missing tool naming its package, instead of suites failing later one by one.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface Prerequisite {
  /** What is looked up on PATH. */
  command: string;
  /** The Debian package that installs it. */
  debianPackage: string;
}

/** The runs service starts every shell command as `prlimit ... bwrap ...` (apps/runs/src/runtime). */
export const PREREQUISITES: readonly Prerequisite[] = [
  { command: 'bwrap', debianPackage: 'bubblewrap' },
  { command: 'prlimit', debianPackage: 'util-linux' },
];

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function isOnPath(command: string, path: string): boolean {
  return path
    .split(delimiter)
    .filter((directory) => directory !== '')
    .some((directory) => isExecutable(join(directory, command)));
}

/** One line per missing tool: `<package> is not installed: apt-get install -y <package>`. */
export function missingPrerequisites(path: string, prerequisites: readonly Prerequisite[] = PREREQUISITES): string[] {
  return prerequisites
    .filter(({ command }) => !isOnPath(command, path))
    .map(({ debianPackage }) => `${debianPackage} is not installed: apt-get install -y ${debianPackage}`);
}

export default function preflight(): void {
  const missing = missingPrerequisites(process.env.PATH ?? '');
  if (missing.length === 0) return;
  const error = new Error(missing.join('\n'));
  // Jest prints the stack of a failed globalSetup; the message is all there is to say.
  error.stack = error.message;
  throw error;
}
