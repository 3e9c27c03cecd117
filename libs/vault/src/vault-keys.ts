/**
 * The vault's keys (interface section 18). Secret values are sealed to a public key and opened only with its
 * private key, VAULT_MASTER_KEY: lifecycle, which stores the secrets, holds the public key alone and can seal but
 * never open; the egress proxy, which releases values to their hosts, holds the private key. So no service that
 * answers routes or hosts tenant code can read a stored value, and neither can a `pg_dump`.
 *
 * Sealing is JWE (RFC 7516) compact serialization with ECDH-ES+A256KW over X25519 and A256GCM (authenticated
 * encryption), made by `jose`; the protected header names the key (`kid`, its RFC 7638 thumbprint) and the
 * secret's name (`nam`), both authenticated, so a sealed value moved onto another name does not open.
 */
import { join } from 'node:path';
import { CompactEncrypt, calculateJwkThumbprint, compactDecrypt, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { makePrivateDirectory, publishNoClobber, readFileIfExists } from '@interns/files';

/** Relative to KEYS_DIR: the development key pair, generated once when VAULT_MASTER_KEY is not set. */
export const VAULT_MASTER_KEY_FILE = join('vault', 'master.jwk');
const KEY_ALGORITHM = 'ECDH-ES+A256KW';
const CONTENT_ENCRYPTION = 'A256GCM';
const CURVE = 'X25519';

export interface VaultKeySettings {
  /** VAULT_MASTER_KEY: the private key, a JWK (JSON) of an X25519 key; null: not given. */
  masterKey: string | null;
  /** VAULT_PUBLIC_KEY: the public key alone, a JWK (JSON); what lifecycle needs to seal. */
  publicKey: string | null;
  keysDir: string;
  /** NODE_ENV; production refuses to generate a key. */
  nodeEnv: string;
}

type KeyLike = Awaited<ReturnType<typeof importJWK>>;

function parseJwk(text: string, name: string): JWK {
  let jwk: JWK;
  try {
    jwk = JSON.parse(text) as JWK;
  } catch {
    throw new Error(`${name} must be a JWK (JSON) of an X25519 key (npm run admin -- vault-key prints one)`);
  }
  if (jwk.kty !== 'OKP' || jwk.crv !== CURVE || typeof jwk.x !== 'string') {
    throw new Error(`${name} must be a JWK of an X25519 key ("kty":"OKP","crv":"X25519")`);
  }
  return jwk;
}

function publicPart(jwk: JWK): JWK {
  return { kty: jwk.kty, crv: jwk.crv, x: jwk.x };
}

/** A new X25519 key pair as a private JWK (what VAULT_MASTER_KEY holds). */
export async function newVaultMasterKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair(KEY_ALGORITHM, { crv: CURVE, extractable: true });
  return exportJWK(privateKey);
}

/** The development key pair under KEYS_DIR, generated once (racing processes keep the first one written). */
async function developmentMasterKey(keysDir: string): Promise<string> {
  const path = join(keysDir, VAULT_MASTER_KEY_FILE);
  const existing = await readFileIfExists(path);
  if (existing !== null) return existing;
  await makePrivateDirectory(join(keysDir, 'vault'), keysDir);
  await publishNoClobber(path, JSON.stringify(await newVaultMasterKey()), 0o600);
  return (await readFileIfExists(path)) as string;
}

/** Seals values to the vault's public key. */
export class VaultSealer {
  private constructor(
    private readonly key: KeyLike,
    readonly keyId: string,
  ) {}

  /**
   * The public key from VAULT_PUBLIC_KEY, else VAULT_MASTER_KEY's public part, else (not in production) the
   * development key pair's under KEYS_DIR.
   */
  static async load(settings: VaultKeySettings): Promise<VaultSealer> {
    let jwk: JWK;
    if (settings.publicKey !== null) jwk = parseJwk(settings.publicKey, 'VAULT_PUBLIC_KEY');
    else if (settings.masterKey !== null) jwk = publicPart(parseJwk(settings.masterKey, 'VAULT_MASTER_KEY'));
    else if (settings.nodeEnv === 'production') {
      throw new Error('VAULT_PUBLIC_KEY (or VAULT_MASTER_KEY) is required with NODE_ENV=production: vault values are sealed to it');
    } else jwk = publicPart(parseJwk(await developmentMasterKey(settings.keysDir), VAULT_MASTER_KEY_FILE));
    const publicJwk = publicPart(jwk);
    return new VaultSealer(await importJWK(publicJwk, KEY_ALGORITHM), await calculateJwkThumbprint(publicJwk));
  }

  /** The value sealed for the secret `name` (compact JWE). */
  async seal(value: string, name: string): Promise<string> {
    return new CompactEncrypt(new TextEncoder().encode(value))
      .setProtectedHeader({ alg: KEY_ALGORITHM, enc: CONTENT_ENCRYPTION, kid: this.keyId, nam: name })
      .encrypt(this.key);
  }
}

/** Opens sealed values: only where VAULT_MASTER_KEY is held (the egress proxy). */
export class VaultOpener {
  private constructor(
    private readonly key: KeyLike,
    readonly keyId: string,
  ) {}

  static async load(settings: Pick<VaultKeySettings, 'masterKey' | 'keysDir' | 'nodeEnv'>): Promise<VaultOpener> {
    let text = settings.masterKey;
    if (text === null) {
      if (settings.nodeEnv === 'production') throw new Error('VAULT_MASTER_KEY is required with NODE_ENV=production');
      text = await developmentMasterKey(settings.keysDir);
    }
    const jwk = parseJwk(text, 'VAULT_MASTER_KEY');
    if (typeof jwk.d !== 'string') throw new Error('VAULT_MASTER_KEY must be the private key (a JWK with "d")');
    return new VaultOpener(await importJWK(jwk, KEY_ALGORITHM), await calculateJwkThumbprint(publicPart(jwk)));
  }

  /** The value; throws when it was sealed to another key, for another name, or was tampered with. */
  async open(sealed: string, name: string): Promise<string> {
    const { plaintext, protectedHeader } = await compactDecrypt(sealed, this.key, {
      keyManagementAlgorithms: [KEY_ALGORITHM],
      contentEncryptionAlgorithms: [CONTENT_ENCRYPTION],
    });
    if (protectedHeader.nam !== name) throw new Error(`a sealed value of secret ${String(protectedHeader.nam)} was found under the name ${name}`);
    return new TextDecoder().decode(plaintext);
  }
}
