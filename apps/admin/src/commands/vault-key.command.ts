import { chmod, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { makePrivateDirectory, readFileIfExists } from '@interns/files';
import { newVaultMasterKey } from '@interns/vault';
import { parseFlags } from './command-args';

export interface VaultKeyPair {
  /** VAULT_MASTER_KEY: the private key, for the egress proxy only. */
  master_key: string;
  /** VAULT_PUBLIC_KEY: for lifecycle, which seals values to it. */
  public_key: string;
}

export interface VaultKeyOptions {
  /** Write the pair into this directory (one file per variable) instead of printing it. */
  dir: string | null;
}

/** What `vault-key --dir` reports: where the pair is, and the public key; never the master key. */
export interface VaultKeyFiles {
  dir: string;
  /** VAULT_MASTER_KEY's file (mode 0600). */
  master_key_file: string;
  /** VAULT_PUBLIC_KEY's file (mode 0644). */
  public_key_file: string;
  public_key: string;
  /** True: both files existed and were kept as they were; false: a new pair was written. */
  kept: boolean;
}

/** The file names `vault-key --dir` writes: the variables they are given as (kustomize secretGenerator `files:`). */
export const VAULT_MASTER_KEY_FILE_NAME = 'VAULT_MASTER_KEY';
export const VAULT_PUBLIC_KEY_FILE_NAME = 'VAULT_PUBLIC_KEY';

export function parseVaultKeyArgs(args: string[]): VaultKeyOptions {
  const { values } = parseFlags('vault-key', args, { dir: { type: 'string' } });
  return { dir: values.dir === undefined ? null : resolve(values.dir) };
}

/**
 * `vault-key [--dir <dir>]`: a new vault key pair (X25519 JWKs, interface section 18) for production, where none
 * is generated: `master_key` goes to VAULT_MASTER_KEY of the egress proxy, `public_key` to VAULT_PUBLIC_KEY of
 * lifecycle. Without `--dir`, printed once and stored nowhere: keep the master key in a secret store. With
 * `--dir`, written there as the files VAULT_MASTER_KEY (0600) and VAULT_PUBLIC_KEY (0644), each holding just its
 * JWK; a pair already there is kept, so running it again (after an upgrade) keeps the keys and every sealed value
 * readable; delete both files to replace the pair.
 */
export async function runVaultKey(options: VaultKeyOptions = { dir: null }): Promise<VaultKeyPair | VaultKeyFiles> {
  if (options.dir !== null) return writeVaultKeyFiles(options.dir);
  return newVaultKeyPair();
}

async function newVaultKeyPair(): Promise<VaultKeyPair> {
  const master = await newVaultMasterKey();
  const { kty, crv, x } = master;
  return { master_key: JSON.stringify(master), public_key: JSON.stringify({ kty, crv, x }) };
}

async function writeVaultKeyFiles(dir: string): Promise<VaultKeyFiles> {
  const masterFile = join(dir, VAULT_MASTER_KEY_FILE_NAME);
  const publicFile = join(dir, VAULT_PUBLIC_KEY_FILE_NAME);
  const [existingMaster, existingPublic] = await Promise.all([readFileIfExists(masterFile), readFileIfExists(publicFile)]);
  const report = (public_key: string, kept: boolean): VaultKeyFiles => ({
    dir,
    master_key_file: masterFile,
    public_key_file: publicFile,
    public_key,
    kept,
  });
  if (existingMaster !== null && existingPublic !== null) {
    assertPair(existingMaster, existingPublic, dir);
    // Kept as they are; only the master key's mode is made private again.
    await chmod(masterFile, 0o600);
    return report(existingPublic.trim(), true);
  }
  if (existingMaster !== null || existingPublic !== null) {
    const present = existingMaster !== null ? VAULT_MASTER_KEY_FILE_NAME : VAULT_PUBLIC_KEY_FILE_NAME;
    const missing = existingMaster !== null ? VAULT_PUBLIC_KEY_FILE_NAME : VAULT_MASTER_KEY_FILE_NAME;
    throw new Error(
      `vault-key: ${dir} holds ${present} but not ${missing}: half a pair; restore ${missing}, or delete ${present} to generate a new pair (values sealed to the old one are lost)`,
    );
  }
  await makePrivateDirectory(dir);
  const pair = await newVaultKeyPair();
  // No trailing newline: kustomize's secretGenerator `files:` takes a file's content verbatim as the value.
  await writeNewFile(masterFile, pair.master_key, 0o600);
  await writeNewFile(publicFile, pair.public_key, 0o644);
  return report(pair.public_key, false);
}

/** Never replaces a file: `wx` fails if another run wrote it meanwhile. */
async function writeNewFile(path: string, content: string, mode: number): Promise<void> {
  await writeFile(path, content, { mode, flag: 'wx' });
  await chmod(path, mode);
}

/** The two files kept must be one pair: a private JWK and its own public part. */
function assertPair(masterText: string, publicText: string, dir: string): void {
  const parse = (text: string, name: string): { x?: unknown; d?: unknown } => {
    try {
      return JSON.parse(text) as { x?: unknown; d?: unknown };
    } catch {
      throw new Error(`vault-key: ${join(dir, name)} is not a JWK (JSON)`);
    }
  };
  const master = parse(masterText, VAULT_MASTER_KEY_FILE_NAME);
  const publicKey = parse(publicText, VAULT_PUBLIC_KEY_FILE_NAME);
  if (typeof master.d !== 'string' || typeof master.x !== 'string') {
    throw new Error(`vault-key: ${join(dir, VAULT_MASTER_KEY_FILE_NAME)} is not a private JWK (no "d" or "x")`);
  }
  if (publicKey.d !== undefined) {
    throw new Error(`vault-key: ${join(dir, VAULT_PUBLIC_KEY_FILE_NAME)} holds a private key; it must hold the public key alone`);
  }
  if (publicKey.x !== master.x) {
    throw new Error(`vault-key: ${join(dir, VAULT_PUBLIC_KEY_FILE_NAME)} is not the public key of ${join(dir, VAULT_MASTER_KEY_FILE_NAME)}`);
  }
}
