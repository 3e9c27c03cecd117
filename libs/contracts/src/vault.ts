/**
 * The vault (interface section 18): secrets of a workspace or of one intern, their rules, and the requests the
 * gateway sends lifecycle. A secret's value goes in with a write and never comes out of any route.
 */
import { z } from 'zod';
import { DomainError } from './errors';
import { isHostname, normalizeHostname } from './hostname';
import { parseObjectBody } from './object-body';
import type { RequestContext } from './principal';

/** Bodies of vault routes are capped lower than other routes' (413 past it). */
export const VAULT_MAX_BODY_BYTES = 425000;
export const VAULT_NAME_PATTERN = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
export const VAULT_MAX_NAME_CHARS = 255;
export const VAULT_MAX_VALUE_CHARS = 65536;
export const VAULT_MAX_HOSTS = 100;
export const VAULT_MAX_COPY_NAMES = 100;
export const VAULT_LIST_DEFAULT_LIMIT = 100;
export const VAULT_LIST_MAX_LIMIT = 100;
export const VAULT_LIST_MAX_OFFSET = 10000;

/** A secret as every route answers it: metadata only, never the value. */
export interface VaultSecret {
  name: string;
  hosts: string[] | null;
  /** Lowercase hex HMAC-SHA256 of the value under a key of its vault. */
  fingerprint: string | null;
  created_at: string;
}

export interface VaultSecretList {
  data: VaultSecret[];
  has_more: boolean;
}

export interface VaultSecretWrite {
  value: string;
  hosts: string[];
}

export interface VaultListQuery {
  limit: number;
  offset: number;
}

/** Which vault a request means: the caller's workspace's, or a visible intern's own. */
export type VaultScope = { kind: 'workspace' } | { kind: 'intern'; internId: string };

export interface VaultListRequest {
  context: RequestContext;
  scope: VaultScope;
  query: VaultListQuery;
}

export interface VaultPutRequest {
  context: RequestContext;
  scope: VaultScope;
  name: string;
  body: VaultSecretWrite;
}

export interface VaultDeleteRequest {
  context: RequestContext;
  scope: VaultScope;
  name: string;
}

export interface VaultCopyRequest {
  context: RequestContext;
  internId: string;
  names: string[];
}

/** The secret's name from the path: 400 when it breaks the rules. */
export function parseVaultSecretName(name: string): string {
  if (name.length < 1 || name.length > VAULT_MAX_NAME_CHARS) {
    throw new DomainError('invalid_body', `secret name must be 1-${VAULT_MAX_NAME_CHARS} characters`);
  }
  if (!VAULT_NAME_PATTERN.test(name)) {
    throw new DomainError(
      'invalid_body',
      'secret name must be lowercase letters and digits in words joined by single underscores, starting with a letter',
    );
  }
  return name;
}

/** Lowercased, its trailing dot removed; a scheme, port, path, wildcard or empty entry is refused. */
function normalizeHost(entry: string, ctx: z.RefinementCtx): string {
  const host = normalizeHostname(entry);
  if (!isHostname(host)) {
    ctx.addIssue({
      code: 'custom',
      message: `${JSON.stringify(entry)} is not a hostname (no scheme, port, path, wildcard or empty entry)`,
    });
    return z.NEVER;
  }
  return host;
}

const hostsSchema = z
  .array(z.string('each host must be a string').transform(normalizeHost), 'hosts must be a list of hostnames')
  .min(1, 'hosts must name at least one host')
  .max(VAULT_MAX_HOSTS, `hosts must name at most ${VAULT_MAX_HOSTS} hosts`)
  .transform((hosts) => [...new Set(hosts)]);

export const vaultSecretWriteSchema = z.strictObject({
  value: z
    .string('value must be a string')
    .min(1, `value must be 1-${VAULT_MAX_VALUE_CHARS} characters`)
    .max(VAULT_MAX_VALUE_CHARS, `value must be 1-${VAULT_MAX_VALUE_CHARS} characters`),
  hosts: hostsSchema,
});

export const vaultCopySchema = z.strictObject({
  names: z
    .array(z.string('each name must be a string'), 'names must be a list of secret names')
    .min(1, 'names must name at least one secret')
    .max(VAULT_MAX_COPY_NAMES, `names must name at most ${VAULT_MAX_COPY_NAMES} secrets`)
    .refine((names) => new Set(names).size === names.length, 'names must not repeat a name'),
});

/** A write body: `{"value","hosts"}` with hosts normalized (lowercased, trailing dot gone, duplicates collapsed). */
export function parseVaultSecretWrite(value: unknown): VaultSecretWrite {
  return parseObjectBody(vaultSecretWriteSchema, value);
}

/** A copy body: `{"names":[...]}`, each a valid secret name, 1-100, distinct. */
export function parseVaultCopy(value: unknown): { names: string[] } {
  const body = parseObjectBody(vaultCopySchema, value);
  body.names.forEach((name, index) => {
    try {
      parseVaultSecretName(name);
    } catch (error) {
      throw new DomainError('invalid_body', `names.${index}: ${(error as DomainError).message}`);
    }
  });
  return body;
}
