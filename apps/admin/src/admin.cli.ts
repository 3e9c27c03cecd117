import { loadConfig } from '@interns/contracts';
import { adminTarget, TextReport } from './admin-output';
import { errorLine, UsageError } from './admin.errors';
import { AdminResources } from './admin.resources';
import { parseApplyArgs, runApply } from './commands/apply.command';
import { parseAuditArgs, runAudit } from './commands/audit.command';
import { parseChatappInstalledArgs, runChatappInstalled } from './commands/chatapp-installed.command';
import { parseDbSetupArgs, runDbSetup } from './commands/db-setup.command';
import { parseInternKeyArgs, runInternKey } from './commands/intern-key.command';
import { parseNatsSetupArgs, runNatsSetup } from './commands/nats-setup.command';
import { parseOauthTokenArgs, runOauthToken } from './commands/oauth-token.command';
import { parseQuickstartArgs, runQuickstart } from './commands/quickstart.command';
import { parseResetArgs, runReset } from './commands/reset.command';
import { parseVaultKeyArgs, runVaultKey } from './commands/vault-key.command';

export const ADMIN_COMMANDS = [
  'quickstart',
  'reset',
  'apply',
  'intern-key',
  'oauth-token',
  'chatapp-installed',
  'audit',
  'nats-setup',
  'db-setup',
  'vault-key',
] as const;

export const USAGE = [
  'usage: npm run admin -- <command> ...   (settings: the environment, then .env in the working directory)',
  '  quickstart [--new-key] [--json]     a development organization, workspace, member and user key',
  '  reset [--yes] [--json]              development only: drop the database and the NATS prefix\'s streams',
  '  apply <file.json>',
  '  intern-key --intern <intern_id> [--key <plaintext>]',
  '  oauth-token --member <id> --workspace <uuid> --scope "<scopes>" [--ttl <seconds>]',
  '  chatapp-installed --workspace <uuid>',
  '  audit --intern <intern_id>',
  '  nats-setup --dir <dir> [--prefix <prefix>] [--store-dir <path>] [--split]',
  '  db-setup',
  '  vault-key [--dir <dir>]',
].join('\n');

export interface AdminIo {
  stdout(text: string): void;
  stderr(text: string): void;
  /** Asks a yes/no question of the person at the terminal; absent when nobody is there (not a TTY). */
  confirm?: (question: string) => Promise<boolean>;
  /** The .env file read besides the environment (environmentWithEnvFile); reported by quickstart and reset. */
  envFile?: string | null;
}

type Env = Record<string, string | undefined>;

async function dispatch(argv: string[], env: Env, io: AdminIo): Promise<unknown> {
  const [command, ...args] = argv;
  if (command === undefined) throw new UsageError(`missing command; expected one of ${ADMIN_COMMANDS.join(', ')}`);
  if (!(ADMIN_COMMANDS as readonly string[]).includes(command)) {
    throw new UsageError(`unknown command "${command}"; expected one of ${ADMIN_COMMANDS.join(', ')}`);
  }
  const config = loadConfig(env);
  const resources = new AdminResources(config);
  try {
    switch (command as (typeof ADMIN_COMMANDS)[number]) {
      case 'quickstart': {
        const options = parseQuickstartArgs(args);
        const context = { config, target: adminTarget(config, io.envFile ?? null) };
        return await runQuickstart(options, context, resources.identityStore, resources.daemonTokenRevoker());
      }
      case 'reset': {
        const options = parseResetArgs(args);
        const target = adminTarget(config, io.envFile ?? null);
        return await runReset(options, { config, target, nats: resources.nats, confirm: io.confirm ?? null });
      }
      case 'apply':
        return await runApply(parseApplyArgs(args), resources.identityStore, resources.daemonTokenRevoker());
      case 'intern-key':
        return await runInternKey(parseInternKeyArgs(args), resources.internOwnerLookup(), resources.identityStore);
      case 'oauth-token': {
        const options = parseOauthTokenArgs(args);
        return await runOauthToken(options, await resources.identityStore(), await resources.localIssuer());
      }
      case 'chatapp-installed':
        return await runChatappInstalled(
          parseChatappInstalledArgs(args),
          await resources.identityStore(),
          resources.chatappInstallNotifier(),
        );
      case 'audit':
        return await runAudit(parseAuditArgs(args), resources.daemonAuditLookup());
      case 'nats-setup':
        return await runNatsSetup(parseNatsSetupArgs(args, config.natsPrefix));
      case 'db-setup':
        parseDbSetupArgs(args);
        return await runDbSetup(config);
      case 'vault-key':
        return await runVaultKey(parseVaultKeyArgs(args));
    }
  } finally {
    await resources.close();
  }
}

/**
 * The admin command: JSON on stdout (a report of lines for quickstart and reset without --json) and 0, or one
 * line on stderr and 1. Everything it opened is closed before it returns.
 */
export async function runAdmin(argv: string[], env: Env, io: AdminIo): Promise<number> {
  if (argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    io.stdout(`${USAGE}\n`);
    return 0;
  }
  try {
    const result = await dispatch(argv, env, io);
    io.stdout(result instanceof TextReport ? result.toString() : `${JSON.stringify(result)}\n`);
    return 0;
  } catch (error) {
    io.stderr(`error: ${errorLine(error)}\n`);
    return 1;
  }
}
