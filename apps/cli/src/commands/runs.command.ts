/**
 * Runs as resources (interface sections 7 and 12): `invoke` starts one, `runs` lists an intern's, `logs` replays a
 * run's stream and follows it live to its end, resuming after the last event seen when the link drops.
 */
import type { Command } from 'commander';
import type { ChatChunk, RunPage, RunResource } from '@interns/contracts';
import { RUN_STATUSES } from '@interns/contracts';
import type { CliContext, CommonOptions } from '../cli-context';
import { readChatStream, type ChatStreamEnd } from '../chat/chat-stream';
import { questionSummary } from '../chat/questions';
import { CliError, EXIT } from '../errors';
import { bodyOf, type ApiClient } from '../http/api-client';
import { readSse } from '../http/sse-reader';
import { resolveInternId } from '../interns/intern-ref';
import { type Output, shortTime } from '../output/output';
import { positiveInt, withCommonOptions } from './common-options';

/** Reconnects of `logs` after a dropped link before it gives up. */
const MAX_RESUMES = 5;

interface InvokeAnswer {
  session_id: string;
  status: 'started' | 'steered';
  run_id: string;
}

export function registerRunCommands(program: Command, ctx: CliContext): void {
  withCommonOptions(
    program
      .command('invoke <intern> <input>')
      .description('start a run that self-drives (permissions consented, questions declined); answers at once')
      .option('--session <session_id>', 'continue an invoke session of yours')
      .option('--follow', "then print the run's output until it ends"),
  ).action(async (ref: string, input: string, options: CommonOptions & { session?: string; follow?: boolean }) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const internId = await resolveInternId(client, ref);
    const body: Record<string, string> = { input };
    if (options.session !== undefined) body.session_id = options.session;
    const answer = await client.json<InvokeAnswer>('POST', `/interns/${internId}/invoke`, { json: body });
    output.result(answer, () => output.line(`${answer.status} run ${answer.run_id} (session ${answer.session_id})`));
    if (options.follow) await followLogs(client, internId, answer.run_id, output);
  });

  withCommonOptions(
    program
      .command('runs <intern>')
      .description("list an intern's runs, newest first")
      .option('--status <statuses>', `only these, comma-separated (${RUN_STATUSES.join(', ')})`)
      .option('--session <session_id>', 'only the runs of this session')
      .option('--limit <n>', 'at most this many (1-500, default 50)', positiveInt)
      .option('--starting-after <cursor>', "the page after this cursor (a list's next_cursor)"),
  ).action(async (ref: string, options: CommonOptions & { status?: string; session?: string; limit?: number; startingAfter?: string }) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const internId = await resolveInternId(client, ref);
    const page = await client.get<RunPage>(`/interns/${internId}/runs`, {
      limit: options.limit,
      status: options.status,
      session_id: options.session,
      starting_after: options.startingAfter,
    });
    output.result(page, () => {
      output.table(page.data, [
        ['ID', (run: RunResource) => run.id],
        ['STATUS', (run) => run.status],
        ['ORIGIN', (run) => run.origin],
        ['FINISH', (run) => run.finish_reason],
        ['TOKENS', (run) => run.usage?.total_tokens],
        ['CREATED', (run) => shortTime(run.created_at)],
        ['ENDED', (run) => shortTime(run.ended_at)],
      ]);
      if (page.has_more) output.note(`more: --starting-after ${page.next_cursor}`);
    });
  });

  withCommonOptions(
    program
      .command('logs <intern> <run>')
      .description("replay a run's output from the start (or after --after), then follow it live to its end")
      .option('--after <event_id>', 'only what came after this event id (a chunk number)'),
  ).action(async (ref: string, runId: string, options: CommonOptions & { after?: string }) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const end = await followLogs(client, await resolveInternId(client, ref), runId, output, options.after);
    if (end.finish === 'error') throw new CliError(`the run ended in error: ${end.error?.message ?? 'unknown'}`, EXIT.failure, 'run_failed');
  });
}

/** Prints a run's stream to its `[DONE]`; a dropped link is resumed after the last event seen (Last-Event-ID). */
export async function followLogs(client: ApiClient, internId: string, runId: string, output: Output, after?: string): Promise<ChatStreamEnd> {
  let lastEventId = after;
  let atLineStart = true;
  const write = (text: string) => {
    output.text(text);
    if (text !== '') atLineStart = text.endsWith('\n');
  };
  const noteLine = (text: string) => {
    if (!atLineStart) write('\n');
    output.note(text);
  };
  for (let attempt = 0; ; attempt++) {
    const headers = lastEventId === undefined ? undefined : { 'last-event-id': lastEventId };
    const response = await client.send('GET', `/interns/${internId}/runs/${runId}/stream`, { headers, stream: true });
    let end: ChatStreamEnd;
    try {
      end = await readChatStream(readSse(bodyOf(response)), {
        onContent: write,
        onChunk: (chunk: ChatChunk, id) => {
          if (output.json) output.jsonLine(chunk);
          if (id !== undefined) lastEventId = id;
        },
        onQuestion: async (asked) => noteLine(`[asks ${questionSummary(asked.question)}]`),
      });
    } catch (error) {
      if (attempt >= MAX_RESUMES) throw error;
      noteLine(`(link lost: ${(error as Error).message}; resuming)`);
      continue;
    }
    const severed = end.error?.metadata?.reason === 'stream_severed';
    if (end.done && !severed) {
      if (!atLineStart) write('\n');
      if (end.finish === 'error' && !output.json) noteLine(`[error: ${end.error?.message ?? 'unknown'}]`);
      return end;
    }
    if (attempt >= MAX_RESUMES) throw new CliError('the run stream kept breaking off', EXIT.failure, 'stream_severed');
    noteLine('(the stream was cut; resuming)');
  }
}
