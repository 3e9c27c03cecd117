/**
 * What every command gets: the environment, the terminal, the credentials store, and the API client of the
 * login in effect. Which API: `--api`, else INTERNS_API_URL, else the last one logged in to, else the local
 * default (`npm start`'s gateway on GATEWAY_PORT's default 8080).
 */
import { CliError, EXIT } from './errors';
import { ApiClient } from './http/api-client';
import { bearerOf, CredentialsStore, normalizeApiUrl } from './credentials/credentials-store';
import { Output, type CliIo } from './output/output';

export const DEFAULT_API_URL = 'http://localhost:8080/api/v1';

/** Options every command takes. */
export interface CommonOptions {
  api?: string;
  json?: boolean;
}

export class CliContext {
  readonly credentials: CredentialsStore;

  constructor(
    readonly env: NodeJS.ProcessEnv,
    readonly io: CliIo,
  ) {
    this.credentials = new CredentialsStore(env);
  }

  output(options: CommonOptions): Output {
    return new Output(this.io, options.json === true);
  }

  /** The API URL a command means (not yet checked for a login). */
  async apiUrl(options: CommonOptions): Promise<string> {
    const named = options.api ?? nonEmpty(this.env.INTERNS_API_URL);
    if (named !== undefined) return normalizeApiUrl(named);
    return (await this.credentials.read()).current ?? DEFAULT_API_URL;
  }

  /** The client of the stored login for the API in effect; exit 3 when there is none. */
  async client(options: CommonOptions): Promise<ApiClient> {
    const url = await this.apiUrl(options);
    const stored = (await this.credentials.read()).apis[url];
    if (stored === undefined) {
      throw new CliError(`not logged in to ${url}: run \`interns login --api ${url}\``, EXIT.auth, 'not_logged_in');
    }
    return new ApiClient(url, bearerOf(stored));
  }

  /** Whether people are at both ends (prompts and raw mode need it). */
  get interactive(): boolean {
    return this.io.stdin.isTTY === true;
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}
