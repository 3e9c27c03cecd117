import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { errors, type ProviderContext } from 'oidc-provider';
import { createMemoryAdapter } from 'oidc-provider/lib/adapters/memory_adapter.js';
import { OAUTH_AUDIENCE, OAUTH_SCOPES } from '@interns/contracts';
import { interactionPage, devicePages, escapeHtml } from './oidc-provider-pages';

const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/** Form bodies of the interaction routes are a few fields; anything bigger is refused. */
const MAX_FORM_BYTES = 16 * 1024;
/** oidc-provider's default tolerance for clock skew, seconds. */
const CLOCK_TOLERANCE_S = 15;

/** A member the server can sign in, with the claims the gateway needs beside `sub`. */
export interface OidcTestAccount {
  member: string;
  organizationId: string;
  workspaceId: string;
}

export interface OidcProviderServerOptions {
  accounts: OidcTestAccount[];
  /** The CLI's public client; default `interns-cli`. */
  clientId?: string;
  /** false: an issuer that offers only the authorization code flow (no device_authorization_endpoint). */
  deviceFlow?: boolean;
  /** The RFC 8707 resource indicator of the platform's API (an absolute URI); its tokens carry `aud` = interns-api. */
  resource?: string;
  /** The API's scopes; default `interns vault:read`. */
  scopes?: string[];
  /** Default 600 s (the gateway refuses lifetimes above OIDC_MAX_TOKEN_AGE_S, 3600 by default). */
  accessTokenTtlSeconds?: number;
  /** `opaque`: a misconfigured issuer whose tokens the platform cannot verify (default `jwt`). */
  accessTokenFormat?: 'jwt' | 'opaque';
  /** How long a device code may wait for approval; default 600 s. */
  deviceCodeTtlSeconds?: number;
  /** The polling interval the server announces (`interval`); default 1 s so tests do not wait RFC 8628's 5 s. */
  pollIntervalSeconds?: number;
}

/**
 * A real OAuth 2.0 / OpenID Connect authorization server (oidc-provider 9) on loopback, for end-to-end tests of
 * the device flow: a public client for the CLI, the device flow, and JWT access tokens for the platform's
 * resource (ES256, key published at `/jwks`) carrying `sub`, `org`, `workspace_id` and `scope` as the gateway
 * expects. Sign-in and consent are minimal HTML forms at `/interaction/:uid` driven through oidc-provider's
 * `interactionDetails`/`interactionFinished` (its devInteractions accept any login and warn on every use);
 * `approveDeviceLogin` plays the user over HTTP. Everything lives in memory and ends with `stop()`.
 */
export class OidcProviderServer {
  private constructor(
    private readonly server: Server,
    readonly issuer: string,
    readonly clientId: string,
    readonly resource: string,
  ) {}

  static async start(options: OidcProviderServerOptions): Promise<OidcProviderServer> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const clientId = options.clientId ?? 'interns-cli';
    const resource = options.resource ?? 'urn:interns:api';
    const accounts = new Map(options.accounts.map((account) => [account.member, account]));
    try {
      const provider = await createProvider(issuer, clientId, resource, accounts, options);
      const handle = provider.callback();
      server.on('request', (request: IncomingMessage, response: ServerResponse) => {
        const route = /^\/interaction\/([\w-]+)(?:\/(login|consent|abort))?$/.exec(new URL(request.url ?? '/', issuer).pathname);
        if (route === null) return handle(request, response);
        interaction(provider, accounts, request, response, route[1], route[2]).catch((error: unknown) => {
          if (!response.headersSent) response.writeHead(400, { 'content-type': 'text/plain' });
          response.end(`interaction failed: ${(error as Error).message}`);
        });
      });
    } catch (error) {
      server.close();
      throw error;
    }
    return new OidcProviderServer(server, issuer, clientId, resource);
  }

  get jwksUri(): string {
    return `${this.issuer}/jwks`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

async function createProvider(
  issuer: string,
  clientId: string,
  resource: string,
  accounts: Map<string, OidcTestAccount>,
  options: OidcProviderServerOptions,
): Promise<Provider> {
  const deviceFlow = options.deviceFlow ?? true;
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const signingKey = { ...(await exportJWK(privateKey)), kid: randomBytes(8).toString('hex'), alg: 'ES256', use: 'sig' };
  const accessTokenTtl = options.accessTokenTtlSeconds ?? 600;
  const scope = (options.scopes ?? [OAUTH_SCOPES.interns, OAUTH_SCOPES.vaultRead]).join(' ');
  const client = deviceFlow
    ? { grant_types: [DEVICE_CODE_GRANT, 'refresh_token'], response_types: [], redirect_uris: [] }
    : { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], redirect_uris: ['http://127.0.0.1/callback'] };
  const provider = new Provider(issuer, {
    clients: [{ client_id: clientId, token_endpoint_auth_method: 'none', id_token_signed_response_alg: 'ES256', ...client }],
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomBytes(32).toString('hex')] },
    findAccount: (_ctx: unknown, sub: string) => (accounts.has(sub) ? { accountId: sub, claims: () => ({ sub }) } : undefined),
    extraTokenClaims: (_ctx: unknown, token: { accountId?: string }) => {
      const account = token.accountId === undefined ? undefined : accounts.get(token.accountId);
      return account === undefined ? undefined : { org: account.organizationId, workspace_id: account.workspaceId };
    },
    // Public CLI client: a refresh token whenever the grant type is allowed (no offline_access/openid dance).
    issueRefreshToken: (_ctx: unknown, oauthClient: { grantTypeAllowed(type: string): boolean }) => oauthClient.grantTypeAllowed('refresh_token'),
    interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
    // oidc-provider's own in-memory store, one per server, named so it does not warn about the implicit default.
    // It keeps records for the clock tolerance past expiry, so an expired device code still answers expired_token.
    clockTolerance: CLOCK_TOLERANCE_S,
    adapter: createMemoryAdapter(CLOCK_TOLERANCE_S),
    // Every lifetime set, so the server does not note each default it falls back on.
    ttl: {
      DeviceCode: options.deviceCodeTtlSeconds ?? 600,
      AccessToken: accessTokenTtl,
      RefreshToken: 3600,
      Grant: 3600,
      Session: 3600,
      Interaction: 600,
    },
    features: {
      devInteractions: { enabled: false },
      deviceFlow: { enabled: deviceFlow, ...devicePages },
      resourceIndicators: {
        enabled: true,
        // One API: requests that name no resource get it, and the token endpoint need not repeat it.
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, indicator: string) => {
          if (indicator !== resource) throw new errors.InvalidTarget(`unknown resource ${indicator}`);
          return {
            scope,
            audience: OAUTH_AUDIENCE,
            accessTokenFormat: options.accessTokenFormat ?? 'jwt',
            accessTokenTTL: accessTokenTtl,
            jwt: { sign: { alg: 'ES256' } },
          };
        },
      },
    },
  });
  const interval = options.pollIntervalSeconds ?? 1;
  provider.use(async (ctx: ProviderContext, next) => {
    await next();
    if (ctx.oidc?.route === 'device_authorization' && ctx.status === 200) ctx.body = { ...(ctx.body as object), interval };
  });
  return provider;
}

/** The sign-in and consent steps of an authorization (here: a device flow's), as plain HTML forms. */
async function interaction(
  provider: Provider,
  accounts: Map<string, OidcTestAccount>,
  request: IncomingMessage,
  response: ServerResponse,
  uid: string,
  action: string | undefined,
): Promise<void> {
  const details = await provider.interactionDetails(request, response);
  if (details.uid !== uid) throw new Error('the interaction cookie belongs to another interaction');
  if (action === undefined || request.method !== 'POST') {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    response.end(interactionPage(details.prompt.name, uid));
    return;
  }
  const form = await formBody(request);
  if (action === 'abort') {
    await provider.interactionFinished(request, response, { error: 'access_denied', error_description: 'End-User denied the request' }, { mergeWithLastSubmission: false });
  } else if (action === 'login') {
    const member = form.get('member') ?? '';
    if (details.prompt.name !== 'login' || !accounts.has(member)) {
      response.writeHead(403, { 'content-type': 'text/plain' });
      response.end(`no sign-in for ${escapeHtml(member)} at this step`);
      return;
    }
    await provider.interactionFinished(request, response, { login: { accountId: member } }, { mergeWithLastSubmission: false });
  } else {
    await provider.interactionFinished(request, response, { consent: { grantId: await grantAll(provider, details) } }, { mergeWithLastSubmission: true });
  }
}

/** Consent to everything the prompt says is missing (as oidc-provider's own development consent does). */
async function grantAll(provider: Provider, details: Awaited<ReturnType<Provider['interactionDetails']>>): Promise<string> {
  if (details.prompt.name !== 'consent' || details.session === undefined) throw new Error(`consent posted at the ${details.prompt.name} step`);
  const existing = details.grantId === undefined ? undefined : await provider.Grant.find(details.grantId);
  const grant = existing ?? new provider.Grant({ accountId: details.session.accountId, clientId: String(details.params.client_id) });
  const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = details.prompt.details;
  if (missingOIDCScope !== undefined) grant.addOIDCScope(missingOIDCScope.join(' '));
  if (missingOIDCClaims !== undefined) grant.addOIDCClaims(missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
  return grant.save();
}

async function formBody(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) throw new Error('form body too large');
    chunks.push(chunk);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
