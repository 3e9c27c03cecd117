/** Why a device-flow login failed; the CLI may branch on it (e.g. offer an API key for `device_flow_unsupported`). */
export type DeviceFlowFailure =
  /** Not a usable issuer URL (not a URL, a query or fragment, not HTTPS: plain HTTP only on loopback), or its discovery names a non-HTTPS endpoint. */
  | 'invalid_issuer'
  /** Its discovery document could not be fetched or is not this issuer's. */
  | 'discovery_failed'
  /** The discovery document has no `device_authorization_endpoint`. */
  | 'device_flow_unsupported'
  /** The user (or the issuer's policy) refused the login. */
  | 'access_denied'
  /** The issuer says the code expired before it was approved. */
  | 'expired_token'
  /** No approval within the wait, or the issuer did not answer a request in time. */
  | 'timeout'
  /** The caller's signal ended the login. */
  | 'aborted'
  /** The access token cannot be used with the platform (not a JWT, another audience, no expiry). */
  | 'unusable_token'
  /** Any other refusal or malformed answer of the issuer (invalid_client, invalid_scope, ...). */
  | 'issuer_error';

/** A failed login; `message` is written for the user as it is. */
export class DeviceFlowError extends Error {
  constructor(
    readonly reason: DeviceFlowFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DeviceFlowError';
  }
}
