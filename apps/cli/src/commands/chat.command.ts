/**
 * `interns chat <intern> [prompt]`: one prompt, or (without one, at a terminal) a conversation a line at a time
 * in one session. `--run` follows a run first (answering its open question), then goes on in its session.
 */
import type { Command } from 'commander';
import { APPROVAL_MODES, type ApprovalMode } from '@interns/contracts';
import type { CliContext, CommonOptions } from '../cli-context';
import { ChatSession, type TurnOutcome } from '../chat/chat-session';
import { ApiError, CliError, EXIT } from '../errors';
import type { Output } from '../output/output';
import { resolveInternId } from '../interns/intern-ref';
import { isPromptExit, TerminalPrompts } from '../prompts/terminal-prompts';
import { withCommonOptions } from './common-options';

interface ChatOptions extends CommonOptions {
  session?: string;
  run?: string;
  approvalMode?: string;
  background?: boolean;
}

/** Typed at the conversation's prompt, ends it (as does Ctrl-C there). */
const EXIT_WORDS = new Set(['.exit', '.quit']);

export function registerChat(program: Command, ctx: CliContext): void {
  withCommonOptions(
    program
      .command('chat <intern> [prompt]')
      .description('chat with an intern: output streams as it comes, its questions are asked here (no prompt: a conversation)')
      .option('--approval-mode <mode>', `${APPROVAL_MODES.join(' or ')}: manual asks before the shell runs anything (default: the API's, self-drive)`)
      .option('--session <session_id>', 'continue this session')
      .option('--run <run_id>', 'follow this run (answering its open question), then go on in its session')
      .option('--background', 'Ctrl-C leaves the run going instead of cancelling it'),
  ).action(async (ref: string, prompt: string | undefined, options: ChatOptions) => {
    const output = ctx.output(options);
    if (options.approvalMode !== undefined && !(APPROVAL_MODES as readonly string[]).includes(options.approvalMode)) {
      throw CliError.usage(`--approval-mode is ${APPROVAL_MODES.join(' or ')}`);
    }
    if (options.session !== undefined && options.run !== undefined) throw CliError.usage('give --session or --run, not both');
    const client = await ctx.client(options);
    const prompts = new TerminalPrompts(output);
    const session = new ChatSession(client, await resolveInternId(client, ref), output, prompts, {
      internRef: ref,
      approvalMode: options.approvalMode as ApprovalMode | undefined,
      background: options.background,
    });
    session.sessionId = options.session ?? null;
    const outcomes: TurnOutcome[] = [];
    if (options.run !== undefined) outcomes.push(await session.followRun(options.run));
    if (prompt !== undefined) {
      outcomes.push(await session.send(prompt === '-' ? await readStdin(ctx.io.stdin) : prompt));
    } else if (prompts.available) {
      await converse(session, prompts, output);
      return;
    } else if (options.run === undefined) {
      throw CliError.usage('give a prompt (or `-` to read it from stdin), or run chat at a terminal for a conversation');
    }
    if (outcomes.includes('interrupted')) throw new CliError('interrupted', EXIT.interrupted, 'interrupted');
    if (outcomes.at(-1) === 'error') throw new CliError('the run ended in error', EXIT.failure, 'run_failed');
  });
}

/** A line, a turn, until `.exit`, Ctrl-C or Ctrl-D at the prompt. */
async function converse(session: ChatSession, prompts: TerminalPrompts, output: Output): Promise<void> {
  for (;;) {
    let line: string;
    try {
      line = await prompts.text('you');
    } catch (error) {
      if (isPromptExit(error)) return;
      throw error;
    }
    const text = line.trim();
    if (EXIT_WORDS.has(text)) return;
    if (text === '') continue;
    try {
      await session.send(line);
    } catch (error) {
      // A refused turn (busy, rate limited, a run that cannot start) is told and the conversation goes on; a
      // credential that stopped working ends it.
      if (!(error instanceof ApiError) || error.exitCode === EXIT.auth) throw error;
      output.note(`error: ${error.message}${error.reason ? ` (${error.status} ${error.reason})` : ''}`);
    }
  }
}

async function readStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stdin) text += chunk.toString();
  if (text.trim() === '') throw CliError.usage('the prompt on stdin is empty');
  return text;
}
