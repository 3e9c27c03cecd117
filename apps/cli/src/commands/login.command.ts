/**
 * `interns login` and `interns logout`. A login checks its credential with one API call before storing it, so a
 * typo is told at once rather than at the next command. The credential comes from `--key`, `--token`, stdin
 * (when it is not a terminal) or a hidden prompt; with `--issuer`, from the OAuth device flow (a hook, below).
 */
import type { Command } from 'commander';
import type { CliContext, CommonOptions } from '../cli-context';
import { DEFAULT_API_URL } from '../cli-context';
import { normalizeApiUrl, type StoredCredential } from '../credentials/credentials-store';
import { ApiError, CliError, EXIT } from '../errors';
import { ApiClient } from '../http/api-client';
import type { Output } from '../output/output';
import { TerminalPrompts } from '../prompts/terminal-prompts';
import { withCommonOptions } from './common-options';

export type OAuthCredential = Extract<StoredCredential, { kind: 'oauth_token' }>;

/** What the device flow is asked: the issuer (its discovery document offers the flow), for which API. */
export interface DeviceFlowRequest {
  issuer: string;
  apiUrl: string;
  clientId?: string;
  scope?: string;
  output: Output;
  env: NodeJS.ProcessEnv;
}

/** Runs the OAuth device flow against an issuer and answers the token to store. */
export type DeviceFlow = (request: DeviceFlowRequest) => Promise<OAuthCredential>;

/** Ways of getting a credential that live outside this file; the device flow plugs in here. */
export interface LoginHooks {
  deviceFlow?: DeviceFlow;
}

interface LoginOptions extends CommonOptions {
  key?: string;
  token?: string;
  issuer?: string;
  clientId?: string;
  scope?: string;
}

/** A JWT (three dot-separated base64url parts) is an OAuth token; anything else an API key. */
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export function registerLogin(program: Command, ctx: CliContext, hooks: LoginHooks): void {
  withCommonOptions(
    program
      .command('login')
      .description('store an API key or OAuth token for an API (checked with one call first)')
      .option('--key <key>', 'an API key (prefer stdin or the prompt: argv is visible to other processes)')
      .option('--token <token>', 'an OAuth access token')
      .option('--issuer <url>', 'sign in with the OAuth device flow of this OIDC issuer')
      .option('--client-id <id>', 'the OAuth client id for the device flow')
      .option('--scope <scopes>', 'the scopes the device flow asks for'),
  ).action(async (options: LoginOptions) => {
    const output = ctx.output(options);
    const apiUrl = normalizeApiUrl(options.api ?? ctx.env.INTERNS_API_URL?.trim() ?? DEFAULT_API_URL);
    const credential = await obtainCredential(ctx, options, apiUrl, output, hooks);
    const verdict = await verify(apiUrl, credential);
    await ctx.credentials.save(apiUrl, credential);
    output.result({ api: apiUrl, kind: credential.kind, credentials_file: ctx.credentials.path }, () => {
      output.line(`logged in to ${apiUrl} with ${credential.kind === 'api_key' ? 'an API key' : 'an OAuth token'}`);
      if (verdict !== null) output.note(verdict);
    });
  });

  withCommonOptions(program.command('logout').description("forget the stored credential of an API")).action(async (options: CommonOptions) => {
    const output = ctx.output(options);
    const apiUrl = await ctx.apiUrl(options);
    const removed = await ctx.credentials.remove(apiUrl);
    output.result({ api: apiUrl, removed }, () => output.line(removed ? `logged out of ${apiUrl}` : `no credential stored for ${apiUrl}`));
  });
}

async function obtainCredential(ctx: CliContext, options: LoginOptions, apiUrl: string, output: Output, hooks: LoginHooks): Promise<StoredCredential> {
  const given = [options.key, options.token, options.issuer].filter((value) => value !== undefined);
  if (given.length > 1) throw CliError.usage('give one of --key, --token and --issuer');
  const savedAt = new Date().toISOString();
  if (options.issuer !== undefined) {
    if (hooks.deviceFlow === undefined) throw CliError.usage('this build of interns has no OAuth device flow: use --key or --token');
    return hooks.deviceFlow({ issuer: options.issuer, apiUrl, clientId: options.clientId, scope: options.scope, output, env: ctx.env });
  }
  if (options.key !== undefined) return { kind: 'api_key', key: checked(options.key), saved_at: savedAt };
  if (options.token !== undefined) return { kind: 'oauth_token', access_token: checked(options.token), saved_at: savedAt };
  const secret = ctx.interactive
    ? await new TerminalPrompts(output).secret(`API key or OAuth token for ${apiUrl}`)
    : await readAll(ctx.io.stdin);
  const value = checked(secret.trim());
  return JWT.test(value) ? { kind: 'oauth_token', access_token: value, saved_at: savedAt } : { kind: 'api_key', key: value, saved_at: savedAt };
}

function checked(value: string): string {
  if (value === '' || /\s/.test(value)) throw CliError.usage('the credential is empty or holds whitespace');
  return value;
}

/**
 * One call with the credential: the list of interns. 2xx is a working credential; a 404 too (an intern key, which
 * may not list, or an organization outside the programme: told as a note). 401 and 403 refuse the login.
 */
async function verify(apiUrl: string, credential: StoredCredential): Promise<string | null> {
  const client = new ApiClient(apiUrl, credential.kind === 'api_key' ? credential.key : credential.access_token);
  try {
    await client.get('/interns', { limit: 1 });
    return null;
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      return 'note: this credential cannot list interns (an intern key names its intern by id)';
    }
    throw error;
  }
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += chunk.toString();
  if (text === '') throw new CliError('no credential on stdin (give --key, --token, or run in a terminal to be asked)', EXIT.usage, 'usage');
  return text;
}
