import { formatShellResult, runProcess } from './process-runner';
import type { ShellRequest, ShellRunner } from './shell-runner';

/** Used when the service itself runs without PATH. */
const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * `RUNTIME_SANDBOX=off`, for development only (refused with NODE_ENV=production): `/bin/sh -c` in the
 * workspace as the service's own user, with nothing of the service's environment. It isolates nothing else.
 */
export class UnsandboxedShell implements ShellRunner {
  constructor(private readonly limits: { timeoutMs: number; outputLimitBytes: number }) {}

  async run(request: ShellRequest): Promise<string> {
    const { timeoutMs, outputLimitBytes } = this.limits;
    try {
      const result = await runProcess(
        {
          file: '/bin/sh',
          args: ['-c', request.command],
          cwd: request.workspace,
          env: { PATH: process.env.PATH ?? FALLBACK_PATH, LANG: 'C.UTF-8', HOME: request.workspace },
        },
        { timeoutMs, outputLimitBytes, signal: request.signal },
      );
      return formatShellResult(result, this.limits);
    } catch (error) {
      return `the shell could not start: ${(error as Error).message}`;
    }
  }
}
