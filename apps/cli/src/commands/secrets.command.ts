/**
 * `interns secrets` (interface section 18): the workspace's vault, or with `--intern` an intern's own. Values go
 * in from stdin or a hidden prompt, never from argv (where other processes and shell history would see them), and
 * never come back: every answer is metadata (name, hosts, fingerprint).
 */
import type { Command } from 'commander';
import type { VaultSecret, VaultSecretList } from '@interns/contracts';
import { VAULT_LIST_MAX_LIMIT, VAULT_LIST_MAX_OFFSET } from '@interns/contracts';
import type { CliContext, CommonOptions } from '../cli-context';
import { CliError } from '../errors';
import type { ApiClient } from '../http/api-client';
import { resolveInternId } from '../interns/intern-ref';
import { type Output, shortTime } from '../output/output';
import { TerminalPrompts } from '../prompts/terminal-prompts';
import { withCommonOptions } from './common-options';

interface ScopeOptions extends CommonOptions {
  intern?: string;
}

export function registerSecrets(program: Command, ctx: CliContext): void {
  const secrets = program.command('secrets').description("vault secrets: the workspace's, or an intern's own with --intern");
  const scoped = (command: Command) => withCommonOptions(command.option('--intern <intern>', "the intern's own vault instead of the workspace's"));

  scoped(secrets.command('ls').description('list secrets (names, hosts, fingerprints; never values)')).action(async (options: ScopeOptions) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const base = await secretsPath(client, options.intern);
    const all: VaultSecret[] = [];
    for (let offset = 0; offset <= VAULT_LIST_MAX_OFFSET; offset += VAULT_LIST_MAX_LIMIT) {
      const page = await client.get<VaultSecretList>(base, { limit: VAULT_LIST_MAX_LIMIT, offset });
      all.push(...page.data);
      if (!page.has_more) break;
    }
    output.result({ data: all, has_more: false }, () => printSecrets(output, all));
  });

  scoped(
    secrets
      .command('set <name>')
      .description('create or replace a secret; its value from stdin or a hidden prompt')
      .requiredOption('--host <host>', 'a host the value may be sent to (repeatable)', collect, [] as string[]),
  ).action(async (name: string, options: ScopeOptions & { host: string[] }) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const base = await secretsPath(client, options.intern);
    const value = await readValue(ctx, output, name);
    const answer = await client.json<{ data: VaultSecret }>('PUT', `${base}/${encodeURIComponent(name)}`, { json: { value, hosts: options.host } });
    output.result(answer, () => output.line(`set ${answer.data.name} for ${answer.data.hosts?.join(', ')} (fingerprint ${answer.data.fingerprint?.slice(0, 12)}...)`));
  });

  scoped(secrets.command('rm <name>').description('delete a secret')).action(async (name: string, options: ScopeOptions) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    await client.json('DELETE', `${await secretsPath(client, options.intern)}/${encodeURIComponent(name)}`);
    output.result({ deleted: name }, () => output.line(`deleted ${name}`));
  });

  withCommonOptions(
    secrets.command('copy <intern> <names...>').description("copy workspace secrets (values and hosts) into an intern's own vault, all or none"),
  ).action(async (ref: string, names: string[], options: CommonOptions) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const internId = await resolveInternId(client, ref);
    const answer = await client.json<{ data: VaultSecret[] }>('POST', `/vault/interns/${internId}/secrets/copy`, { json: { names } });
    output.result(answer, () => output.line(`copied ${answer.data.map((secret) => secret.name).join(', ')} to ${ref}`));
  });
}

async function secretsPath(client: ApiClient, intern: string | undefined): Promise<string> {
  return intern === undefined ? '/vault/secrets' : `/vault/interns/${await resolveInternId(client, intern)}/secrets`;
}

function printSecrets(output: Output, secrets: VaultSecret[]): void {
  output.table(secrets, [
    ['NAME', (secret: VaultSecret) => secret.name],
    ['HOSTS', (secret) => secret.hosts?.join(',')],
    ['FINGERPRINT', (secret) => secret.fingerprint?.slice(0, 16)],
    ['CREATED', (secret) => shortTime(secret.created_at)],
  ]);
}

/** The value: all of stdin (one trailing newline dropped, as `echo` adds one), or typed twice at a hidden prompt. */
async function readValue(ctx: CliContext, output: Output, name: string): Promise<string> {
  if (!ctx.interactive) {
    let text = '';
    for await (const chunk of ctx.io.stdin) text += chunk.toString();
    const value = text.replace(/\r?\n$/, '');
    if (value === '') throw CliError.usage('no value on stdin');
    return value;
  }
  const prompts = new TerminalPrompts(output);
  const value = await prompts.secret(`value of ${name}`);
  if ((await prompts.secret('again, to confirm')) !== value) throw CliError.usage('the two values differ; nothing was set');
  return value;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
