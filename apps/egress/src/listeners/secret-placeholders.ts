import { createHmac } from 'node:crypto';
import type { DataSource } from 'typeorm';

/**
 * The variables a sandboxed command gets from the platform itself: a secret never takes one of these names (a
 * secret named `path` must not replace PATH, nor `https_proxy` the proxy). Such a secret has no variable; it is
 * still released where its placeholder is written out by hand.
 */
export const SANDBOX_RESERVED_ENV = new Set([
  'HOME',
  'USER',
  'LOGNAME',
  'PATH',
  'LANG',
  'TMPDIR',
  'SHELL',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'ALL_PROXY',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'NODE_EXTRA_CA_CERTS',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
  'GIT_SSL_CAINFO',
  'PIP_CERT',
  'AWS_CA_BUNDLE',
  'CARGO_HTTP_CAINFO',
  'NODE_OPTIONS',
  'LD_PRELOAD',
  'LD_LIBRARY_PATH',
]);

/**
 * A secret's placeholder in an intern's sandbox (interface section 19): `vault:<name>:<random>`, the random part an
 * HMAC of the intern and the name under the service's `placeholder_secret`: stable across commands and replicas,
 * different for every intern, and useless to guess (the proxy releases nothing for a string it did not hand out).
 */
export class SecretPlaceholders {
  constructor(private readonly key: string) {}

  static async open(dataSource: DataSource): Promise<SecretPlaceholders> {
    const [row]: { value: string }[] = await dataSource.query(`SELECT value FROM egress.settings WHERE name = 'placeholder_secret'`);
    if (row === undefined) throw new Error('egress.settings has no placeholder_secret: the egress migration did not run');
    return new SecretPlaceholders(row.value);
  }

  of(internId: string, name: string): string {
    const random = createHmac('sha256', this.key).update(`${internId}\n${name}`).digest('hex').slice(0, 32);
    return `vault:${name}:${random}`;
  }

  /** The sandbox's variables of these secrets: each name uppercased, holding its placeholder; reserved names left out. */
  environment(internId: string, names: readonly string[]): Record<string, string> {
    const env: Record<string, string> = {};
    for (const name of names) {
      const variable = name.toUpperCase();
      if (!SANDBOX_RESERVED_ENV.has(variable)) env[variable] = this.of(internId, name);
    }
    return env;
  }
}
