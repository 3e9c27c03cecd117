/**
 * `interns egress` (interface section 19): an intern's egress policy (the hosts its tools may reach besides those
 * its secrets are bound to) and the log of what the egress proxy let through or refused.
 */
import type { Command } from 'commander';
import type { EgressLogEntry, EgressLogPage, EgressPolicy } from '@interns/contracts';
import type { CliContext, CommonOptions } from '../cli-context';
import { CliError } from '../errors';
import { resolveInternId } from '../interns/intern-ref';
import { shortTime } from '../output/output';
import { positiveInt, withCommonOptions } from './common-options';

export function registerEgress(program: Command, ctx: CliContext): void {
  const egress = program.command('egress').description("an intern's egress policy and log");

  withCommonOptions(egress.command('show <intern>').description('the hosts the intern may reach')).action(async (ref: string, options: CommonOptions) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const policy = await client.get<EgressPolicy>(`/interns/${await resolveInternId(client, ref)}/egress`);
    output.result(policy, () => (policy.allow.length === 0 ? output.line('(nothing allowed beyond hosts its secrets are bound to)') : policy.allow.forEach((entry) => output.line(entry))));
  });

  withCommonOptions(
    egress
      .command('set <intern> [entries...]')
      .description('replace the policy: exact hostnames, or *.<domain> for every subdomain')
      .option('--none', 'allow nothing (an empty policy)'),
  ).action(async (ref: string, entries: string[], options: CommonOptions & { none?: boolean }) => {
    const output = ctx.output(options);
    if (entries.length === 0 && !options.none) throw CliError.usage('name the hosts to allow, or give --none for an empty policy');
    if (entries.length > 0 && options.none) throw CliError.usage('--none takes no hosts');
    const client = await ctx.client(options);
    const policy = await client.json<EgressPolicy>('PUT', `/interns/${await resolveInternId(client, ref)}/egress`, { json: { allow: entries } });
    output.result(policy, () => output.line(policy.allow.length === 0 ? 'egress policy: empty' : `egress policy: ${policy.allow.join(' ')}`));
  });

  withCommonOptions(
    egress
      .command('log <intern>')
      .description('what the egress proxy handled for the intern, newest first')
      .option('--limit <n>', 'at most this many (1-500, default 50)', positiveInt)
      .option('--starting-after <cursor>', "the page after this cursor (a list's next_cursor)"),
  ).action(async (ref: string, options: CommonOptions & { limit?: number; startingAfter?: string }) => {
    const output = ctx.output(options);
    const client = await ctx.client(options);
    const page = await client.get<EgressLogPage>(`/interns/${await resolveInternId(client, ref)}/egress/log`, {
      limit: options.limit,
      starting_after: options.startingAfter,
    });
    output.result(page, () => {
      output.table(page.data, [
        ['AT', (entry: EgressLogEntry) => shortTime(entry.at)],
        ['DECISION', (entry) => entry.decision],
        ['HOST', (entry) => `${entry.host}:${entry.port}`],
        ['REQUEST', (entry) => (entry.method === null ? null : `${entry.method} ${entry.path ?? ''}`)],
        ['STATUS', (entry) => entry.status],
        ['SECRETS', (entry) => entry.secrets.join(',')],
        ['REASON', (entry) => entry.reason],
      ]);
      if (page.has_more) output.note(`more: --starting-after ${page.next_cursor}`);
    });
  });
}
