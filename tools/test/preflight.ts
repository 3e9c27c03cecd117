/**
 * Jest's globalSetup. The tests run the real shell sandbox, so the tools it is built from must be installed
 * besides Node.js, PostgreSQL and NATS (CONTRACT section 17), and the deployment tests render deploy/k8s with
 * kubectl. When one is missing the run stops before any test, with one line per missing tool saying how to
 * get it, instead of suites failing later one by one.
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface Prerequisite {
  /** What is looked up on PATH. */
  command: string;
  /** What the line names as missing: the Debian package, or the tool. */
  name: string;
  /** How to get it. */
  install: string;
}

function debianPackage(command: string, name: string): Prerequisite {
  return { command, name, install: `apt-get install -y ${name}` };
}

/**
 * The deployment tests render deploy/k8s with `kubectl kustomize` (tools/deploy/kustomize.int.spec.ts).
 * Debian 12's own kubectl (kubernetes-client 1.20, kustomize 2) cannot render the overlays, so the line
 * points at the Kubernetes project's.
 */
export const KUBECTL: Prerequisite = {
  command: 'kubectl',
  name: 'kubectl',
  install:
    "the deployment tests render deploy/k8s with `kubectl kustomize`; install the Kubernetes project's kubectl " +
    "(tested with 1.32; Debian 12's kubernetes-client, 1.20, is too old): https://kubernetes.io/docs/tasks/tools/",
};

/**
 * The runs service starts every shell command as `prlimit ... bwrap ...`, makes each workspace an ext4 image and
 * bridges the egress proxy into each sandbox with socat (apps/runs/src/runtime); the console's browser suite drives
 * Debian's chromium (apps/console/src/e2e); then kubectl.
 */
export const PREREQUISITES: readonly Prerequisite[] = [
  debianPackage('bwrap', 'bubblewrap'),
  debianPackage('prlimit', 'util-linux'),
  debianPackage('mkfs.ext4', 'e2fsprogs'),
  debianPackage('socat', 'socat'),
  debianPackage('chromium', 'chromium'),
  KUBECTL,
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

/** `<name> is not installed: <how to get it>`, e.g. `bubblewrap is not installed: apt-get install -y bubblewrap`. */
export function notInstalled({ name, install }: Prerequisite): string {
  return `${name} is not installed: ${install}`;
}

/** One line per missing tool. */
export function missingPrerequisites(path: string, prerequisites: readonly Prerequisite[] = PREREQUISITES): string[] {
  return prerequisites.filter(({ command }) => !isOnPath(command, path)).map(notInstalled);
}

export default function preflight(): void {
  const missing = missingPrerequisites(process.env.PATH ?? '');
  if (missing.length === 0) return;
  const error = new Error(missing.join('\n'));
  // Jest prints the stack of a failed globalSetup; the message is all there is to say.
  error.stack = error.message;
  throw error;
}
