/**
 * `interns`: the command-line client (interface section 23). Builds the commands, runs one, and turns whatever
 * ended it into an exit code and a message: the API's envelope message (the envelope itself under `--json`),
 * with a hint where the reason has an obvious next step.
 */
import { Command, CommanderError } from 'commander';
import { CliContext } from './cli-context';
import { ApiError, CliError, EXIT, type ExitCode } from './errors';
import type { CliIo } from './output/output';
import { isPromptExit } from './prompts/terminal-prompts';
import { registerLogin, type LoginHooks } from './commands/login.command';
import { runDeviceFlow } from './login/device-flow-hook';
import { registerInternCommands } from './commands/interns.command';
import { registerChat } from './commands/chat.command';
import { registerRunCommands } from './commands/runs.command';
import { registerAttach } from './commands/attach.command';
import { registerCopy } from './commands/cp.command';
import { registerSecrets } from './commands/secrets.command';
import { registerEgress } from './commands/egress.command';

/** Login methods built apart from the command: the OAuth device flow (`login --issuer`). */
const LOGIN_HOOKS: LoginHooks = { deviceFlow: runDeviceFlow };

/** What to try next after a refusal, by its reason. */
const HINTS: Record<string, string> = {
  workspace_loss_not_acknowledged: 'its workspace archive failed: `interns rm <intern> --acknowledge-workspace-loss` deletes it without the archive',
  personal_identity_required: 'this needs a personal OAuth token: `interns login --token <token>`',
  intern_not_running: 'provision it first: `interns provision <intern> --wait`',
  insufficient_scope: 'the token lacks a scope this needs (interns; vault:read to sign)',
};

export function buildProgram(ctx: CliContext, hooks: LoginHooks = LOGIN_HOOKS): Command {
  const program = new Command('interns')
    .description('command-line client of the interns platform')
    .version('1.2.0', '-V, --version', 'the interface version this client speaks')
    .showHelpAfterError()
    .configureOutput({ writeOut: (text) => ctx.io.stdout.write(text), writeErr: (text) => ctx.io.stderr.write(text) });
  registerLogin(program, ctx, hooks);
  registerInternCommands(program, ctx);
  registerChat(program, ctx);
  registerRunCommands(program, ctx);
  registerAttach(program, ctx);
  registerCopy(program, ctx);
  registerSecrets(program, ctx);
  registerEgress(program, ctx);
  // Every command throws instead of exiting, so runCli chooses the code.
  const exitOverride = (command: Command): void => {
    command.exitOverride();
    command.commands.forEach(exitOverride);
  };
  exitOverride(program);
  return program;
}

/** Runs one command line (`argv` without node and the script); resolves to the exit code. */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv, io: CliIo, hooks?: LoginHooks): Promise<ExitCode | number> {
  const ctx = new CliContext(env, io);
  const json = argv.includes('--json');
  const program = buildProgram(ctx, hooks);
  if (json) program.configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: () => undefined });
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (error) {
    return report(error, io, json);
  }
}

function report(error: unknown, io: CliIo, json: boolean): number {
  if (error instanceof CommanderError) {
    // Help and version are "errors" to commander; its own message was already written (not under --json).
    if (error.exitCode === 0) return EXIT.ok;
    if (json) io.stderr.write(`${JSON.stringify(CliError.usage(error.message.replace(/^error: /, '')).toEnvelope())}\n`);
    return EXIT.usage;
  }
  if (isPromptExit(error)) return EXIT.interrupted;
  if (error instanceof ApiError) {
    if (json) io.stderr.write(`${JSON.stringify(error.toEnvelope())}\n`);
    else io.stderr.write(`error: ${error.message}${error.reason ? ` (${error.status} ${error.reason})` : ` (${error.status})`}\n`);
    const hint = HINTS[error.reason ?? ''];
    if (hint !== undefined && !json) io.stderr.write(`hint: ${hint}\n`);
    return error.exitCode;
  }
  if (error instanceof CliError) {
    if (json) io.stderr.write(`${JSON.stringify(error.toEnvelope())}\n`);
    else io.stderr.write(`error: ${error.message}\n`);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  if (json) io.stderr.write(`${JSON.stringify(new CliError(message, EXIT.failure, 'client_error').toEnvelope())}\n`);
  else io.stderr.write(`error: ${message}\n`);
  return EXIT.failure;
}
