/**
 * What the JSON logger never writes (CONTRACT section 16: logs never contain credentials). Field names are
 * matched at the top of a log line and up to three objects deep (pino's redaction has no recursive wildcard),
 * which covers request headers (`req.headers.authorization`), error details and the objects services log.
 */
export const CREDENTIAL_FIELD_NAMES = [
  'authorization',
  'proxy-authorization',
  'cookie',
  'set-cookie',
  'x-api-key',
  'token',
  'access_token',
  'accessToken',
  'refresh_token',
  'refreshToken',
  'id_token',
  'idToken',
  'bearer',
  'secret',
  'client_secret',
  'clientSecret',
  'api_key',
  'apiKey',
  'password',
  'passphrase',
  'seed',
  'nkey',
  'creds',
  'credentials',
  'private_key',
  'privateKey',
  'signing_key',
  'signingKey',
  'daemon_token',
  'daemonToken',
  'x-intern-invoke-signature',
  'x-intern-invoke-signature-v2',
] as const;

const DEPTH_PREFIXES = ['', '*.', '*.*.', '*.*.*.'];

/** pino `redact.paths`: every credential name at each depth, in bracket notation (names hold '-'). */
export const LOG_REDACT_PATHS: string[] = DEPTH_PREFIXES.flatMap((prefix) =>
  CREDENTIAL_FIELD_NAMES.map((name) => (prefix === '' ? `["${name}"]` : `${prefix}["${name}"]`)),
);

export const REDACTED = '[Redacted]';

/** Query parameters whose value is a credential when a URL carries one (`?access_token=`, `?api_key=`). */
const CREDENTIAL_QUERY_PARAMETER = /^(?:.*token|.*secret|.*password|.*api[_-]?key|key|code|signature|sig|auth.*)$/i;

/**
 * A request target fit for a log line: the values of credential-like query parameters become [Redacted];
 * the path and the other parameters stay as they came.
 */
export function redactUrlCredentials(url: string): string {
  const queryAt = url.indexOf('?');
  if (queryAt < 0) return url;
  const query = url
    .slice(queryAt + 1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      if (equals < 0) return pair;
      let name = pair.slice(0, equals);
      try {
        name = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        // A malformed escape: match the name as sent.
      }
      return CREDENTIAL_QUERY_PARAMETER.test(name) ? `${pair.slice(0, equals)}=${REDACTED}` : pair;
    })
    .join('&');
  return `${url.slice(0, queryAt)}?${query}`;
}
