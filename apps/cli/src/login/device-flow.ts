/**
 * `interns login --issuer <url>`: the OAuth 2.0 device authorization grant (RFC 8628) with openid-client.
 * The CLI shows a code and a URL; the user approves on any browser; the issuer hands the CLI an access token
 * for the platform (a JWT for audience `interns-api`, CONTRACT section 1). Nothing is stored here: the caller
 * keeps the token. Only HTTPS issuers, or plain HTTP on loopback for development (`issuer-url.ts`).
 */
import * as oidc from 'openid-client';
import { OAUTH_AUDIENCE, OAUTH_SCOPES } from '@interns/contracts';
import { DeviceFlowError } from './device-flow-error';
import { checkEndpoint, parseIssuer, type ParsedIssuer } from './issuer-url';

export { DeviceFlowError, type DeviceFlowFailure } from './device-flow-error';

/** The public client the platform's documentation asks issuers to register for the CLI. */
export const DEFAULT_CLI_CLIENT_ID = 'interns-cli';
/** Intern routes as the member (`interns`) and signing for daemon access (`vault:read`). */
export const DEFAULT_DEVICE_FLOW_SCOPE = `${OAUTH_SCOPES.interns} ${OAUTH_SCOPES.vaultRead}`;
const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
/** However long an issuer's code lives, the CLI stops waiting after this. */
const MAX_APPROVAL_WAIT_MS = 30 * 60_000;
/** A code's `expires_in` is the issuer's verdict: the local deadline waits this much longer for its expired_token. */
const EXPIRY_GRACE_MS = 15_000;

/** What the CLI prints so the user can approve the login in a browser. */
export interface DeviceUserCode {
  verificationUri: string;
  /** The URI with the code filled in, when the issuer offers one (e.g. for a QR code). */
  verificationUriComplete: string | null;
  userCode: string;
  /** Seconds until the code expires. */
  expiresIn: number;
}

export interface DeviceFlowLoginOptions {
  /** The issuer's identifier (its discovery document is `<issuer>/.well-known/openid-configuration`). */
  issuer: string | URL;
  /** The CLI's public client at the issuer; default `interns-cli`. */
  clientId?: string;
  /** Space separated; default `interns vault:read`. */
  scope?: string;
  /** RFC 8707 resource indicator, for issuers that pick the token's audience by it (must be an absolute URI). */
  resource?: string;
  /** Called once the issuer has issued a code; the login waits for the user only after it returns. */
  onUserCode: (code: DeviceUserCode) => void | Promise<void>;
  /** Cancels the login (e.g. Ctrl-C): rejects with reason `aborted`. */
  signal?: AbortSignal;
  /** The longest wait for the user's approval; default the code's lifetime (plus a little), at most 30 min. */
  timeoutMs?: number;
  /** Each request to the issuer; default 10 s. */
  requestTimeoutMs?: number;
}

export interface DeviceFlowTokens {
  /** The bearer credential for the API (`Authorization: Bearer <accessToken>`). */
  accessToken: string;
  /** When the access token expires (ISO 8601 UTC). */
  expiresAt: string;
  /** Present when the issuer grants one. */
  refreshToken?: string;
  /** The scopes granted (the issuer may grant fewer than asked). */
  scopes: string[];
}

/**
 * Runs the device flow against `issuer` and resolves to the platform's access token. Rejects with a
 * DeviceFlowError whose `reason` says what went wrong (no device flow at this issuer, denied, expired, timeout,
 * cancelled, ...) and whose message can be shown to the user as it is.
 */
export async function deviceFlowLogin(options: DeviceFlowLoginOptions): Promise<DeviceFlowTokens> {
  const issuer = parseIssuer(options.issuer);
  const config = await discover(issuer, options.clientId ?? DEFAULT_CLI_CLIENT_ID, options);
  const endpoint = config.serverMetadata().device_authorization_endpoint;
  if (endpoint === undefined) {
    throw new DeviceFlowError('device_flow_unsupported', `the issuer ${issuer.label} does not offer the device flow (its discovery document has no device_authorization_endpoint)`);
  }
  checkEndpoint(issuer, endpoint, 'device_authorization_endpoint');
  checkEndpoint(issuer, config.serverMetadata().token_endpoint, 'token_endpoint');

  const resource: Record<string, string> = options.resource === undefined ? {} : { resource: options.resource };
  const authorization = await oidc
    .initiateDeviceAuthorization(config, { scope: options.scope ?? DEFAULT_DEVICE_FLOW_SCOPE, ...resource })
    .catch((error: unknown) => failure(error, options.signal, null));
  await options.onUserCode(userCodeOf(issuer, authorization));

  const waitMs = Math.min(options.timeoutMs ?? authorization.expires_in * 1000 + EXPIRY_GRACE_MS, MAX_APPROVAL_WAIT_MS);
  const deadline = AbortSignal.timeout(waitMs);
  const polling = options.signal === undefined ? deadline : AbortSignal.any([options.signal, deadline]);
  const response = await untilAborted(oidc.pollDeviceAuthorizationGrant(config, authorization, resource, { signal: polling }), polling)
    .catch((error: unknown) => failure(error, options.signal, { deadline, waitMs }));
  return tokensOf(response);
}

/** openid-client notices an abort only between its waits (up to 5 s apart): a cancel should not wait for that. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** Whether the issuer's discovery document names a device authorization endpoint (`login` falls back to an API key otherwise). */
export async function supportsDeviceFlow(
  issuer: string | URL,
  options: Pick<DeviceFlowLoginOptions, 'clientId' | 'signal' | 'requestTimeoutMs'> = {},
): Promise<boolean> {
  const config = await discover(parseIssuer(issuer), options.clientId ?? DEFAULT_CLI_CLIENT_ID, options);
  return config.serverMetadata().device_authorization_endpoint !== undefined;
}

/**
 * OpenID Connect discovery, then RFC 8414's location for issuers that publish only OAuth metadata. openid-client
 * checks that the document names this very issuer. Every request honours the caller's signal.
 */
async function discover(
  issuer: ParsedIssuer,
  clientId: string,
  options: Pick<DeviceFlowLoginOptions, 'signal' | 'requestTimeoutMs'>,
): Promise<oidc.Configuration> {
  const signal = options.signal;
  const fetchWithSignal: oidc.CustomFetch = (url, init) =>
    fetch(url, { ...init, signal: signal === undefined ? init.signal : AbortSignal.any([init.signal ?? signal, signal]) });
  const discoveryOptions: oidc.DiscoveryRequestOptions = {
    [oidc.customFetch]: fetchWithSignal,
    timeout: Math.ceil((options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS) / 1000),
    execute: issuer.insecure ? [oidc.allowInsecureRequests] : [],
  };
  let firstError: unknown;
  for (const algorithm of ['oidc', 'oauth2'] as const) {
    try {
      return await oidc.discovery(issuer.url, clientId, undefined, oidc.None(), { ...discoveryOptions, algorithm });
    } catch (error) {
      if (signal?.aborted) failure(error, signal, null);
      firstError ??= error;
    }
  }
  throw new DeviceFlowError('discovery_failed', `could not read the discovery document of ${issuer.label}: ${describe(firstError)}`, { cause: firstError });
}

/** What the user is shown, checked first: an issuer's strings go to a terminal. */
function userCodeOf(issuer: ParsedIssuer, authorization: oidc.DeviceAuthorizationResponse): DeviceUserCode {
  checkEndpoint(issuer, authorization.verification_uri, 'verification_uri');
  const complete = authorization.verification_uri_complete;
  if (complete !== undefined) checkEndpoint(issuer, complete, 'verification_uri_complete');
  if (!/^[\x21-\x7e ]{1,64}$/.test(authorization.user_code)) {
    throw new DeviceFlowError('issuer_error', 'the issuer sent a user code that is not printable text');
  }
  return {
    verificationUri: authorization.verification_uri,
    verificationUriComplete: complete ?? null,
    userCode: authorization.user_code,
    expiresIn: authorization.expires_in,
  };
}

/**
 * The platform takes only JWT access tokens for its own audience: a token that cannot work is refused here with
 * a message that says why, rather than answering 401 at the first command. The claims are read, not verified:
 * the gateway verifies them.
 */
function tokensOf(response: oidc.TokenEndpointResponse): DeviceFlowTokens {
  const claims = jwtClaims(response.access_token);
  if (claims === null) {
    throw new DeviceFlowError('unusable_token', 'the issuer returned an access token that is not a JWT; the platform needs JWT access tokens (configure the issuer to issue them for audience interns-api)');
  }
  const audiences = typeof claims.aud === 'string' ? [claims.aud] : Array.isArray(claims.aud) ? claims.aud : [];
  if (!audiences.includes(OAUTH_AUDIENCE)) {
    throw new DeviceFlowError('unusable_token', `the issuer's access token is for audience ${JSON.stringify(claims.aud ?? null)}, not ${OAUTH_AUDIENCE} (pass the resource the issuer expects, or configure its audience)`);
  }
  const expiresAtMs = typeof response.expires_in === 'number' ? Date.now() + response.expires_in * 1000 : typeof claims.exp === 'number' ? claims.exp * 1000 : null;
  if (expiresAtMs === null) throw new DeviceFlowError('unusable_token', 'the issuer returned an access token without an expiry');
  const scope = response.scope ?? (typeof claims.scope === 'string' ? claims.scope : '');
  return {
    accessToken: response.access_token,
    expiresAt: new Date(expiresAtMs).toISOString(),
    ...(typeof response.refresh_token === 'string' ? { refreshToken: response.refresh_token } : {}),
    scopes: scope.split(' ').filter((s) => s !== ''),
  };
}

function jwtClaims(token: string): Record<string, unknown> | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
    return typeof claims === 'object' && claims !== null && !Array.isArray(claims) ? (claims as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Turns what openid-client rejects with into a DeviceFlowError: the issuer's verdict, a timeout or the caller's cancel. */
function failure(error: unknown, signal: AbortSignal | undefined, polling: { deadline: AbortSignal; waitMs: number } | null): never {
  if (error instanceof DeviceFlowError) throw error;
  if (signal?.aborted) throw new DeviceFlowError('aborted', 'login cancelled', { cause: error });
  if (polling?.deadline.aborted) {
    throw new DeviceFlowError('timeout', `the login was not approved within ${Math.round(polling.waitMs / 1000)} s; run login again`, { cause: error });
  }
  if (error instanceof oidc.ResponseBodyError) {
    const description = error.error_description ? ` (${error.error_description})` : '';
    if (error.error === 'access_denied') throw new DeviceFlowError('access_denied', `the login was denied at the issuer${description}`, { cause: error });
    if (error.error === 'expired_token') throw new DeviceFlowError('expired_token', 'the code expired before the login was approved; run login again', { cause: error });
    throw new DeviceFlowError('issuer_error', `the issuer refused the login: ${error.error}${description}`, { cause: error });
  }
  if (error instanceof oidc.ClientError && error.code === 'OAUTH_TIMEOUT') {
    throw new DeviceFlowError('timeout', 'the issuer did not answer in time', { cause: error });
  }
  throw new DeviceFlowError('issuer_error', `the device flow failed: ${describe(error)}`, { cause: error });
}

/**
 * openid-client's messages are generic ("unexpected HTTP response status code"); the causes say which. Duck-typed:
 * fetch's errors may come from another realm (a test runner's), where instanceof fails.
 */
function describe(error: unknown): string {
  const messages: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 3 && isErrorLike(current); depth++) {
    if (!messages.includes(current.message)) messages.push(current.message);
    const cause: unknown = current.cause;
    if (typeof cause === 'object' && cause !== null && 'status' in cause && 'url' in cause) {
      messages.push(`HTTP ${String(cause.status)} from ${String(cause.url)}`);
      break;
    }
    current = cause;
  }
  return messages.length > 0 ? messages.join(': ') : String(error);
}

function isErrorLike(value: unknown): value is { message: string; cause?: unknown } {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string';
}
