/**
 * Where `interns login` keeps credentials: `${XDG_CONFIG_HOME:-~/.config}/interns/credentials.json`, the directory
 * 0700 and the file 0600 (written to a temporary file of that mode, then renamed, so no reader ever sees a partial
 * or wider file). One entry per API URL; `current` is the URL the last login was for, used when neither `--api`
 * nor INTERNS_API_URL names one.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CliError, EXIT } from '../errors';

/** What a login stores for one API. */
export type StoredCredential =
  | { kind: 'api_key'; key: string; saved_at: string }
  | {
      kind: 'oauth_token';
      access_token: string;
      /** Set by the device flow: the issuer, and what renews the token. */
      issuer?: string;
      refresh_token?: string;
      expires_at?: string;
      saved_at: string;
    };

export interface CredentialsFile {
  version: 1;
  current: string | null;
  apis: Record<string, StoredCredential>;
}

const EMPTY: CredentialsFile = { version: 1, current: null, apis: {} };

export function configDirOf(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME && env.XDG_CONFIG_HOME.startsWith('/') ? env.XDG_CONFIG_HOME : join(env.HOME ?? homedir(), '.config');
  return join(base, 'interns');
}

/** The bearer value a stored credential sends. */
export function bearerOf(credential: StoredCredential): string {
  return credential.kind === 'api_key' ? credential.key : credential.access_token;
}

/** API URLs are stored without a trailing slash, so `.../api/v1/` and `.../api/v1` are one entry. */
export function normalizeApiUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw CliError.usage(`not a URL: ${raw} (like http://localhost:8080/api/v1)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw CliError.usage(`the API URL must be http(s): ${raw}`);
  if (url.search !== '' || url.hash !== '') throw CliError.usage(`the API URL takes no query or fragment: ${raw}`);
  return url.toString().replace(/\/+$/, '');
}

export class CredentialsStore {
  readonly dir: string;
  readonly path: string;

  constructor(env: NodeJS.ProcessEnv) {
    this.dir = configDirOf(env);
    this.path = join(this.dir, 'credentials.json');
  }

  async read(): Promise<CredentialsFile> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return structuredClone(EMPTY);
      throw error;
    }
    try {
      const parsed = JSON.parse(text) as CredentialsFile;
      if (parsed?.version !== 1 || typeof parsed.apis !== 'object' || parsed.apis === null) throw new Error('unknown format');
      return parsed;
    } catch (error) {
      throw new CliError(`${this.path} is not a credentials file of this client (${(error as Error).message}); remove it and log in again`, EXIT.failure, 'bad_credentials_file');
    }
  }

  async save(apiUrl: string, credential: StoredCredential): Promise<void> {
    const file = await this.read();
    file.apis[apiUrl] = credential;
    file.current = apiUrl;
    await this.write(file);
  }

  /** Forgets one API's credential; true when there was one. */
  async remove(apiUrl: string): Promise<boolean> {
    const file = await this.read();
    if (!(apiUrl in file.apis)) return false;
    delete file.apis[apiUrl];
    if (file.current === apiUrl) file.current = Object.keys(file.apis)[0] ?? null;
    await this.write(file);
    return true;
  }

  private async write(file: CredentialsFile): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    // An existing directory keeps its mode through mkdir: tighten it (it holds secrets).
    if (((await stat(this.dir)).mode & 0o077) !== 0) await chmod(this.dir, 0o700);
    const temporary = `${this.path}.${randomBytes(6).toString('hex')}.tmp`;
    try {
      await writeFile(temporary, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
      await rename(temporary, this.path);
    } catch (error) {
      await rm(temporary, { force: true });
      throw error;
    }
  }
}
