// secrets/: endpoints' signing secrets at rest, sealed under WEBHOOK_SECRETS_KEY; the endpoints store them, the
// deliveries open them to sign.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';
import { makePrivateDirectory, publishNoClobber, readFileIfExists } from '@interns/files';

/** Relative to KEYS_DIR: the key generated for development when WEBHOOK_SECRETS_KEY is not set. */
export const WEBHOOK_SECRETS_KEY_FILE = join('webhooks', 'secrets.key');
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SEALED_PREFIX = 'v1';
/** What `newEndpointSecret` makes: a secret stored before sealing existed reads as itself until it is resealed. */
const PLAINTEXT_PREFIX = 'whsec_';

export interface EndpointSecretsKeys {
  /** WEBHOOK_SECRETS_KEY: 32 bytes, base64; null: the development key under KEYS_DIR (generated once). */
  key: string | null;
  /** WEBHOOK_SECRETS_KEY_PREVIOUS: still opens what it sealed, until the start-up pass reseals it. */
  previousKey: string | null;
  keysDir: string;
}

class SealingKey {
  /** Names the key in what it sealed, so the right one opens it (and a reseal finds what the current one did not). */
  readonly id: string;

  constructor(readonly bytes: Buffer) {
    this.id = createHash('sha256').update(bytes).digest('hex').slice(0, 8);
  }

  static fromBase64(text: string, name: string): SealingKey {
    const bytes = Buffer.from(text.trim(), 'base64');
    if (bytes.length !== KEY_BYTES) throw new Error(`${name} must be ${KEY_BYTES} bytes, base64 (openssl rand -base64 32)`);
    return new SealingKey(bytes);
  }
}

/**
 * Webhook endpoint secrets at rest (CONTRACT section 22): AES-256-GCM, a fresh IV per secret, the endpoint's id
 * as additional data (a sealed secret copied onto another endpoint does not open). Stored as
 * `v1.<key id>.<iv>.<ciphertext+tag>` (base64url), so the database, its backups and a `pg_dump` hold no secret.
 * The webhooks service is the only holder of the key; a row sealed under WEBHOOK_SECRETS_KEY_PREVIOUS opens until
 * the start-up pass (EndpointStore.resealSecrets) seals it again under the current key.
 */
export class EndpointSecrets {
  private constructor(
    private readonly current: SealingKey,
    private readonly previous: SealingKey | null,
  ) {}

  static async load(keys: EndpointSecretsKeys): Promise<EndpointSecrets> {
    const current = keys.key !== null ? SealingKey.fromBase64(keys.key, 'WEBHOOK_SECRETS_KEY') : await developmentKey(keys.keysDir);
    const previous = keys.previousKey !== null ? SealingKey.fromBase64(keys.previousKey, 'WEBHOOK_SECRETS_KEY_PREVIOUS') : null;
    return new EndpointSecrets(current, previous?.id === current.id ? null : previous);
  }

  seal(secret: string, endpointId: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.bytes, iv);
    cipher.setAAD(Buffer.from(endpointId));
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return [SEALED_PREFIX, this.current.id, iv.toString('base64url'), sealed.toString('base64url')].join('.');
  }

  /** The secret; throws when it was sealed under a key this process does not hold, or was tampered with. */
  open(stored: string, endpointId: string): string {
    if (stored.startsWith(PLAINTEXT_PREFIX)) return stored;
    const [prefix, keyId, iv, sealed, ...rest] = stored.split('.');
    if (prefix !== SEALED_PREFIX || iv === undefined || sealed === undefined || rest.length > 0) {
      throw new Error(`the secret of webhook endpoint ${endpointId} is not in a known form`);
    }
    const key = [this.current, this.previous].find((candidate) => candidate?.id === keyId);
    if (key === undefined || key === null) {
      throw new Error(`the secret of webhook endpoint ${endpointId} is sealed under key ${keyId}, which this service does not hold`);
    }
    const bytes = Buffer.from(sealed, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key.bytes, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(endpointId));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  }

  /** Whether a stored value is sealed under the current key (else the start-up pass seals it again). */
  isCurrent(stored: string): boolean {
    return stored.startsWith(`${SEALED_PREFIX}.${this.current.id}.`);
  }
}

/** `<KEYS_DIR>/webhooks/secrets.key` (0600 in a 0700 directory), made once; every replica sharing KEYS_DIR reads it. */
async function developmentKey(keysDir: string): Promise<SealingKey> {
  const directory = join(resolve(keysDir), 'webhooks');
  const path = join(resolve(keysDir), WEBHOOK_SECRETS_KEY_FILE);
  await makePrivateDirectory(directory);
  await publishNoClobber(path, `${randomBytes(KEY_BYTES).toString('base64')}\n`, 0o600);
  const text = await readFileIfExists(path);
  if (text === null) throw new Error(`${path} vanished right after it was written`);
  return SealingKey.fromBase64(text, path);
}
