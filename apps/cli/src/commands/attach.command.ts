/**
 * `interns attach <intern>`: a login shell in the intern's sandbox, in this terminal. Daemon access (an OAuth
 * token's; API keys get 403 personal_identity_required) answers the door's origin and a token; the terminal
 * runs raw (keys go to the shell as typed, Ctrl-C included), its size follows the window. The shell's exit
 * (or the socket's close) ends the command.
 */
import type { Command } from 'commander';
import type { DaemonAccessReply } from '@interns/contracts';
import type { CliContext, CommonOptions } from '../cli-context';
import { CliError, EXIT } from '../errors';
import { resolveInternId } from '../interns/intern-ref';
import { openTerminal, type TerminalSize } from '../terminal/terminal-socket';
import { withCommonOptions } from './common-options';

/** Close codes: 1000 the shell exited or we closed; 4000 the platform ended it and says why. */
const NORMAL_CLOSE = 1000;

export function registerAttach(program: Command, ctx: CliContext): void {
  withCommonOptions(
    program.command('attach <intern>').description("open a shell in the intern's sandbox (needs an OAuth token; exit or Ctrl-D leaves)"),
  ).action(async (ref: string, options: CommonOptions) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const internId = await resolveInternId(client, ref);
    const access = await client.get<DaemonAccessReply>(`/interns/${internId}/daemon`);
    const { stdin, stdout } = ctx.io;
    const size = (): TerminalSize => ({ cols: stdout.columns || 80, rows: stdout.rows || 24 });
    const socket = await openTerminal(access.origin, access.token, size());
    if (!output.json) output.note(`attached to ${ref} (exit or Ctrl-D to leave)`);

    const raw = stdin.isTTY === true;
    if (raw) stdin.setRawMode(true);
    const onInput = (bytes: Buffer) => socket.send(bytes, { binary: true });
    const onResize = () => socket.send(JSON.stringify({ type: 'resize', ...size() }));
    stdin.on('data', onInput);
    stdin.resume();
    stdout.on('resize', onResize);
    // The first size went with the URL; one resize frame at start as well, in case the window changed meanwhile.
    onResize();
    socket.on('message', (bytes: Buffer) => stdout.write(bytes));

    const closed = await new Promise<{ code: number; reason: string }>((resolve) => {
      socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
      // Stdin ending (a pipe) ends the shell too: what was typed has been sent.
      stdin.once('end', () => socket.close(NORMAL_CLOSE));
    });
    stdin.removeListener('data', onInput);
    stdout.removeListener('resize', onResize);
    if (raw) stdin.setRawMode(false);
    stdin.pause();
    if (closed.code !== NORMAL_CLOSE) {
      throw new CliError(`the terminal was closed: ${closed.reason || `code ${closed.code}`}`, EXIT.failure, closed.reason || 'terminal_closed');
    }
    output.result({ closed: closed }, () => output.note('detached'));
  });
}
