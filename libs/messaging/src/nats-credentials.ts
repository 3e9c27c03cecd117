import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ConnectionOptions, nkeyAuthenticator } from '@nats-io/transport-node';
import { natsInboxPrefix, type NatsProcess } from '@interns/contracts';

/** What a process needs to know to reach a secured broker (PlatformConfig's NATS_CREDS_DIR and NATS_TLS_CA). */
export interface NatsSecurity {
  natsCredsDir: string | null;
  natsTlsCa: string | null;
}

const SEED_BLOCK = /-----BEGIN USER NKEY SEED-----\s*(S[A-Z2-7]+)\s*------END USER NKEY SEED------/;

/**
 * A process's credentials file. The broker's configuration lists each user by its public nkey (no operator
 * or account JWTs), so the file holds the user's seed only, in the decorated block NATS tools print.
 */
export function natsCredsFile(seed: string): string {
  return [
    '************************* IMPORTANT *************************',
    'NKEY Seed printed below can be used to sign and prove identity.',
    'NKEYs are sensitive and should be treated as secrets.',
    '',
    '-----BEGIN USER NKEY SEED-----',
    seed,
    '------END USER NKEY SEED------',
    '',
  ].join('\n');
}

export function natsCredsPath(credsDir: string, process: NatsProcess): string {
  return join(credsDir, `${process}.creds`);
}

/** The user seed of a credentials file written by `natsCredsFile`. */
export function parseNatsCreds(text: string, source: string): string {
  const seed = SEED_BLOCK.exec(text)?.[1];
  if (!seed) throw new Error(`${source} holds no USER NKEY SEED block (write it with "npm run admin -- nats-setup")`);
  return seed;
}

/**
 * Connection options: `process`'s own reply prefix, its own credentials file and the configured CA (without
 * NATS_CREDS_DIR and NATS_TLS_CA: anonymous, plain TCP). Files are read once, at connect time,
 * so a missing file fails the start-up instead of every reconnect.
 */
export function natsSecurityOptions(process: NatsProcess, security: NatsSecurity | undefined): Partial<ConnectionOptions> {
  // Always, secured or not: the broker's permissions allow each user only its own reply subjects.
  const options: Partial<ConnectionOptions> = { inboxPrefix: natsInboxPrefix(process) };
  if (security?.natsCredsDir) {
    const path = natsCredsPath(security.natsCredsDir, process);
    const seed = parseNatsCreds(readFileSync(path, 'utf8'), path);
    options.authenticator = nkeyAuthenticator(new TextEncoder().encode(seed));
  }
  if (security?.natsTlsCa) options.tls = { ca: readFileSync(security.natsTlsCa, 'utf8') };
  return options;
}
