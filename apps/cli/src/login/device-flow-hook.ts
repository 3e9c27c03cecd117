/**
 * `interns login --issuer <url>`: the device flow (device-flow.ts) as `login` calls it. The code to enter and where
 * go to stderr (never mixed into `--json` output); Ctrl-C cancels the wait at once; a refusal is a CliError with the
 * flow's own reason (`access_denied`, `expired_token`, `device_flow_unsupported`, ...).
 */
import type { DeviceFlow } from '../commands/login.command';
import { CliError, EXIT, type ExitCode } from '../errors';
import { DeviceFlowError, type DeviceFlowFailure, deviceFlowLogin } from './device-flow';

/** Exit codes (docs/cli.md) of the flow's failures; every other one is a refused login (3). */
const EXIT_BY_REASON: Partial<Record<DeviceFlowFailure, ExitCode>> = {
  invalid_issuer: EXIT.usage,
  discovery_failed: EXIT.unreachable,
  timeout: EXIT.failure,
};

export const runDeviceFlow: DeviceFlow = async ({ issuer, clientId, scope, output }) => {
  const cancel = new AbortController();
  const onInterrupt = () => cancel.abort();
  process.once('SIGINT', onInterrupt);
  try {
    const tokens = await deviceFlowLogin({
      issuer,
      clientId,
      scope,
      signal: cancel.signal,
      onUserCode: ({ verificationUri, verificationUriComplete, userCode, expiresIn }) => {
        output.note(`Open ${verificationUri} and enter the code ${userCode} (it expires in ${Math.ceil(expiresIn / 60)} min).`);
        if (verificationUriComplete !== null) output.note(`Or open ${verificationUriComplete}, the code filled in.`);
        output.note('Waiting for the approval...');
      },
    });
    return {
      kind: 'oauth_token',
      access_token: tokens.accessToken,
      issuer: typeof issuer === 'string' ? issuer : String(issuer),
      ...(tokens.refreshToken === undefined ? {} : { refresh_token: tokens.refreshToken }),
      expires_at: tokens.expiresAt,
      saved_at: new Date().toISOString(),
    };
  } catch (error) {
    if (!(error instanceof DeviceFlowError)) throw error;
    if (error.reason === 'aborted') throw new CliError(error.message, EXIT.interrupted, error.reason);
    throw new CliError(error.message, EXIT_BY_REASON[error.reason] ?? EXIT.auth, error.reason);
  } finally {
    process.off('SIGINT', onInterrupt);
  }
};
