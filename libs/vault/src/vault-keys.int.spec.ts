import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newVaultMasterKey, VAULT_MASTER_KEY_FILE, VaultOpener, VaultSealer } from './vault-keys';

describe('vault keys', () => {
  let keysDir: string;

  beforeAll(async () => {
    keysDir = await mkdtemp(join(tmpdir(), 'vault-keys-'));
  });

  afterAll(async () => {
    await rm(keysDir, { recursive: true, force: true });
  });

  it('seals with the public key alone and opens with the private key, for the same name only', async () => {
    const master = await newVaultMasterKey();
    const { d: _private, ...publicJwk } = master;
    const sealer = await VaultSealer.load({ masterKey: null, publicKey: JSON.stringify(publicJwk), keysDir, nodeEnv: 'production' });
    const opener = await VaultOpener.load({ masterKey: JSON.stringify(master), keysDir, nodeEnv: 'production' });
    expect(sealer.keyId).toBe(opener.keyId);
    const sealed = await sealer.seal('ghp_value', 'github_token');
    expect(sealed).not.toContain('ghp_value');
    expect(sealed.split('.')).toHaveLength(5);
    expect(await opener.open(sealed, 'github_token')).toBe('ghp_value');
    await expect(opener.open(sealed, 'other_name')).rejects.toThrow(/found under the name other_name/);
    // Two seals of one value differ (fresh ephemeral key and IV each time).
    expect(await sealer.seal('ghp_value', 'github_token')).not.toBe(sealed);
  });

  it('does not open what was sealed to another key, nor a tampered value', async () => {
    const sealer = await VaultSealer.load({ masterKey: JSON.stringify(await newVaultMasterKey()), publicKey: null, keysDir, nodeEnv: 'production' });
    const stranger = await VaultOpener.load({ masterKey: JSON.stringify(await newVaultMasterKey()), keysDir, nodeEnv: 'production' });
    const sealed = await sealer.seal('value', 'name');
    await expect(stranger.open(sealed, 'name')).rejects.toThrow();
    const opener = await VaultOpener.load({ masterKey: null, keysDir, nodeEnv: 'development' });
    const own = await (await VaultSealer.load({ masterKey: null, publicKey: null, keysDir, nodeEnv: 'development' })).seal('value', 'name');
    const parts = own.split('.');
    parts[3] = `${parts[3].slice(0, -2)}${parts[3].endsWith('AA') ? 'BB' : 'AA'}`;
    await expect(opener.open(parts.join('.'), 'name')).rejects.toThrow();
    expect(await opener.open(own, 'name')).toBe('value');
  });

  it('generates the development key pair once under KEYS_DIR, private to its owner', async () => {
    const first = await VaultSealer.load({ masterKey: null, publicKey: null, keysDir, nodeEnv: 'development' });
    const second = await VaultSealer.load({ masterKey: null, publicKey: null, keysDir, nodeEnv: 'development' });
    expect(second.keyId).toBe(first.keyId);
    const file = join(keysDir, VAULT_MASTER_KEY_FILE);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ kty: 'OKP', crv: 'X25519' });
  });

  it('refuses to start in production without a key, and names a malformed one', async () => {
    await expect(VaultSealer.load({ masterKey: null, publicKey: null, keysDir, nodeEnv: 'production' })).rejects.toThrow(
      /VAULT_PUBLIC_KEY \(or VAULT_MASTER_KEY\) is required with NODE_ENV=production/,
    );
    await expect(VaultOpener.load({ masterKey: null, keysDir, nodeEnv: 'production' })).rejects.toThrow(/VAULT_MASTER_KEY is required/);
    await expect(VaultSealer.load({ masterKey: null, publicKey: 'not json', keysDir, nodeEnv: 'production' })).rejects.toThrow(/VAULT_PUBLIC_KEY must be a JWK/);
    const { d: _private, ...publicJwk } = await newVaultMasterKey();
    await expect(VaultOpener.load({ masterKey: JSON.stringify(publicJwk), keysDir, nodeEnv: 'production' })).rejects.toThrow(/must be the private key/);
  });
});
