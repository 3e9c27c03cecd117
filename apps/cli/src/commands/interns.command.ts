/**
 * The lifecycle commands (interface sections 3-5): ls, create, show, update, provision, suspend, rm. Each is one
 * API call (plus, for a name, the lookup of its id); `--wait` polls until the intern settles.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { InternList, InternStatus, InternView, UpdateInternBody, CreateInternBody } from '@interns/contracts';
import { INTERN_STATUSES, LIST_MAX_LIMIT } from '@interns/contracts';
import type { CliContext, CommonOptions } from '../cli-context';
import { CliError, EXIT } from '../errors';
import type { ApiClient } from '../http/api-client';
import { resolveInternId } from '../interns/intern-ref';
import { INTERN_COLUMNS, printIntern, statusText } from '../interns/intern-format';
import { TerminalPrompts } from '../prompts/terminal-prompts';
import { positiveInt, withCommonOptions } from './common-options';
import { watchInterns } from '../events/watch-interns';
import type { Output } from '../output/output';

/** A polled wait's pace and its default bound. */
const WAIT_POLL_MS = 500;
const DEFAULT_WAIT_S = 300;
/** Statuses an intern rests in: `--wait` returns at one of these (an install wait lasts until an operator acts). */
const SETTLED: readonly InternStatus[] = ['running', 'stopped', 'failed', 'destroy_failed', 'awaiting_chatapp_install'];

export function registerInternCommands(program: Command, ctx: CliContext): void {
  withCommonOptions(
    program
      .command('ls')
      .description('list interns, newest first')
      .option('--status <statuses>', 'only these statuses, comma-separated')
      .option('--limit <n>', `at most this many (1-${LIST_MAX_LIMIT}; default all)`, positiveInt)
      .option('--watch', 'then follow status changes live (GET /events) until Ctrl-C'),
  ).action(async (options: CommonOptions & { status?: string; limit?: number; watch?: boolean }) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const interns = await listInterns(client, options);
    // All pages in one list: the API's list shape, nothing left to page through.
    output.result({ data: interns, has_more: false }, () => output.table(interns, INTERN_COLUMNS));
    if (options.watch) await watchInterns(client, output, interns);
  });

  withCommonOptions(
    program
      .command('create <name>')
      .description('create an intern')
      .option('--description <text>', 'what it is for')
      .option('--instructions <text>', 'its instructions')
      .option('--instructions-file <path>', 'its instructions, from a file')
      .option('--model <author/model>', 'its model (default: the workspace default)')
      .option('--vault <vault_id>', "borrow another intern's vault")
      .option('--provision', 'provision it at once')
      .option('--wait', 'with --provision: wait until it is running (or failed)')
      .option('--idempotency-key <key>', 'retry-safe create: the same key and body answer the same intern'),
  ).action(async (name: string, options: CommonOptions & Record<string, string | boolean | undefined>) => {
    const output = ctx.output(options);
    if (options.wait && !options.provision) throw CliError.usage('--wait waits for a provision: give --provision too');
    const client = await ctx.client(options);
    const body: CreateInternBody = { name };
    if (typeof options.description === 'string') body.description = options.description;
    const instructions = await instructionsOf(options);
    if (instructions !== undefined) body.instructions = instructions;
    if (typeof options.model === 'string') body.model = options.model;
    if (typeof options.vault === 'string') body.vault_id = options.vault;
    if (options.provision) body.provision = true;
    const headers = typeof options.idempotencyKey === 'string' ? { 'idempotency-key': options.idempotencyKey } : undefined;
    let intern = await client.json<InternView>('POST', '/interns', { json: body, headers });
    if (options.wait && options.provision) intern = await waitUntilSettled(client, intern.id, output);
    output.result(intern, () => output.line(`created ${intern.name} ${intern.id} (${statusText(intern)})`));
    if (options.wait && intern.status !== 'running' && options.provision) throw notRunning(intern);
  });

  withCommonOptions(program.command('show <intern>').description('show one intern')).action(async (ref: string, options: CommonOptions) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const intern = await client.get<InternView>(`/interns/${await resolveInternId(client, ref)}`);
    output.result(intern, () => printIntern(output, intern));
  });

  withCommonOptions(
    program
      .command('update <intern>')
      .description('change an intern (a model change applies from the next provision)')
      .option('--name <name>', 'a new name')
      .option('--description <text>', 'a new description')
      .option('--instructions <text>', 'new instructions')
      .option('--instructions-file <path>', 'new instructions, from a file')
      .option('--model <author/model>', 'a new model')
      .option('--unset <field>', 'clear description, instructions or model (repeatable)', collect, [] as string[]),
  ).action(async (ref: string, options: CommonOptions & Record<string, string | string[] | undefined>) => {
    const output = ctx.output(options);
    const body: UpdateInternBody = {};
    if (typeof options.name === 'string') body.name = options.name;
    if (typeof options.description === 'string') body.description = options.description;
    const instructions = await instructionsOf(options);
    if (instructions !== undefined) body.instructions = instructions;
    if (typeof options.model === 'string') body.model = options.model;
    for (const field of options.unset as string[]) {
      if (field !== 'description' && field !== 'instructions' && field !== 'model') throw CliError.usage(`--unset takes description, instructions or model, not ${field}`);
      if (body[field] !== undefined) throw CliError.usage(`--unset ${field} contradicts --${field}`);
      body[field] = null;
    }
    if (Object.keys(body).length === 0) throw CliError.usage('nothing to change: give --name, --description, --instructions, --model or --unset');
    const client = await ctx.client(options);
    const intern = await client.json<InternView>('PATCH', `/interns/${await resolveInternId(client, ref)}`, { json: body });
    output.result(intern, () => output.line(`updated ${intern.name} ${intern.id}`));
  });

  withCommonOptions(
    program
      .command('provision <intern>')
      .description('start an intern (stopped or failed) on its way to running')
      .option('--wait', 'wait until it is running (or failed)'),
  ).action(async (ref: string, options: CommonOptions & { wait?: boolean }) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const id = await resolveInternId(client, ref);
    const answer = await client.json<{ provisioning: true }>('POST', `/interns/${id}/provision`);
    if (!options.wait) return output.result(answer, () => output.line(`provisioning ${ref}`));
    const intern = await waitUntilSettled(client, id, output);
    output.result(intern, () => output.line(`${intern.name}: ${statusText(intern)}`));
    if (intern.status !== 'running') throw notRunning(intern);
  });

  withCommonOptions(program.command('suspend <intern>').description('stop an intern, keeping its disk and configuration')).action(
    async (ref: string, options: CommonOptions) => {
      const output = ctx.output(options);
      const client = await ctx.client(options);
      const answer = await client.json<{ suspended: true }>('POST', `/interns/${await resolveInternId(client, ref)}/suspend`);
      output.result(answer, () => output.line(`suspended ${ref}`));
    },
  );

  withCommonOptions(
    program
      .command('rm <intern>')
      .description('delete an intern: its runs end, its workspace is archived, its vault and disk removed')
      .option('-y, --yes', 'do not ask for confirmation')
      .option('--acknowledge-workspace-loss', 'finish a delete whose workspace archive failed (the workspace is lost)'),
  ).action(async (ref: string, options: CommonOptions & { yes?: boolean; acknowledgeWorkspaceLoss?: boolean }) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const id = await resolveInternId(client, ref);
    let acknowledge = options.acknowledgeWorkspaceLoss === true;
    if (!options.yes) {
      const prompts = new TerminalPrompts(output);
      prompts.require('rm asks for confirmation: give --yes where there is no terminal');
      const intern = await client.get<InternView>(`/interns/${id}`);
      if (!(await prompts.confirm(`delete ${intern.name} (${intern.id})? Its runs end and its vault and disk are removed`))) {
        throw new CliError('not deleted', EXIT.failure, 'declined');
      }
      if (archiveFailed(intern) && !acknowledge) {
        output.note(`its last delete failed archiving the workspace: ${intern.last_failure_message}`);
        acknowledge = await prompts.confirm('delete without the archive (the workspace is lost for good)?');
        if (!acknowledge) throw new CliError('not deleted', EXIT.failure, 'declined');
      }
    }
    const answer = await client.json<{ deleting: true }>('DELETE', `/interns/${id}`, acknowledge ? { json: { acknowledge_workspace_loss: true } } : {});
    output.result(answer, () => output.line(`deleting ${ref}`));
  });
}

async function listInterns(client: ApiClient, options: { status?: string; limit?: number }): Promise<InternView[]> {
  if (options.status !== undefined) {
    const unknown = options.status.split(',').filter((status) => !(INTERN_STATUSES as readonly string[]).includes(status.trim()));
    if (unknown.length > 0) throw CliError.usage(`unknown status ${unknown.join(', ')} (one of ${INTERN_STATUSES.join(', ')})`);
  }
  const interns: InternView[] = [];
  let cursor: string | undefined;
  for (;;) {
    const want = options.limit === undefined ? LIST_MAX_LIMIT : Math.min(LIST_MAX_LIMIT, options.limit - interns.length);
    const page = await client.get<InternList>('/interns', { limit: want, status: options.status, starting_after: cursor });
    interns.push(...page.data);
    if (!page.has_more || page.next_cursor === undefined || interns.length >= (options.limit ?? Infinity)) return interns;
    cursor = page.next_cursor;
  }
}

/** Polls the intern until it rests (running, stopped, failed), telling each new step on stderr. */
export async function waitUntilSettled(client: ApiClient, id: string, output: Output, timeoutS = DEFAULT_WAIT_S): Promise<InternView> {
  const deadline = Date.now() + timeoutS * 1000;
  let told = '';
  for (;;) {
    const intern = await client.get<InternView>(`/interns/${id}`);
    const text = statusText(intern);
    if (text !== told && !output.json) output.note(`${intern.name}: ${text}`);
    told = text;
    if (SETTLED.includes(intern.status)) return intern;
    if (Date.now() > deadline) throw new CliError(`${intern.name} is still ${text} after ${timeoutS} s`, EXIT.failure, 'timeout');
    await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
  }
}

function notRunning(intern: InternView): CliError {
  return new CliError(`${intern.name} is ${statusText(intern)}`, EXIT.failure, 'not_running');
}

function archiveFailed(intern: InternView): boolean {
  return intern.status === 'destroy_failed' && (intern.last_failure_message ?? '').startsWith('workspace_archive_failed');
}

async function instructionsOf(options: Record<string, unknown>): Promise<string | undefined> {
  if (typeof options.instructions === 'string' && typeof options.instructionsFile === 'string') {
    throw CliError.usage('give --instructions or --instructions-file, not both');
  }
  if (typeof options.instructionsFile === 'string') return readFile(options.instructionsFile, 'utf8');
  return typeof options.instructions === 'string' ? options.instructions : undefined;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
