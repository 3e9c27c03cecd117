import { newVaultMasterKey } from '@interns/vault';
import { parseFlags } from './command-args';

export interface VaultKeyPair {
  /** VAULT_MASTER_KEY: the private key, for the egress proxy only. */
  master_key: string;
  /** VAULT_PUBLIC_KEY: for lifecycle, which seals values to it. */
  public_key: string;
}

export function parseVaultKeyArgs(args: string[]): void {
  parseFlags('vault-key', args, {});
}

/**
 * `vault-key`: a new vault key pair (X25519 JWKs, interface section 18) for production, where none is generated:
 * `master_key` goes to VAULT_MASTER_KEY of the egress proxy, `public_key` to VAULT_PUBLIC_KEY of lifecycle.
 * Printed once and stored nowhere: keep the master key in a secret store.
 */
export async function runVaultKey(): Promise<VaultKeyPair> {
  const master = await newVaultMasterKey();
  const { kty, crv, x } = master;
  return { master_key: JSON.stringify(master), public_key: JSON.stringify({ kty, crv, x }) };
}
