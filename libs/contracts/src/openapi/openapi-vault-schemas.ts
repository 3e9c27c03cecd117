/**
 * `components.schemas` of the vault (interface section 18): a secret as answered (metadata, never the value), its
 * lists, and the write and copy bodies (from the zod schemas the gateway parses them with).
 */
import { vaultCopySchema, vaultSecretWriteSchema, VAULT_MAX_NAME_CHARS, VAULT_NAME_PATTERN } from '../vault';
import { JsonSchema, nullable, ref, requestSchemaOf, strictObject, TIMESTAMP } from './json-schema';

export const VAULT_SCHEMAS: Record<string, JsonSchema> = {
  VaultSecret: {
    ...strictObject({
      name: { type: 'string', minLength: 1, maxLength: VAULT_MAX_NAME_CHARS, pattern: VAULT_NAME_PATTERN.source },
      hosts: nullable({ type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string', minLength: 1 } }),
      fingerprint: nullable({ type: 'string', pattern: '^[0-9a-f]{64}$' }),
      created_at: TIMESTAMP,
    }),
    description:
      '`hosts`: the exact hostnames the value is released to (never null here: every write names its hosts). `fingerprint`: ' +
      'HMAC-SHA256 of the value under a key of its vault, so equal values in one vault match, never across vaults.',
  },
  VaultSecretList: strictObject({ data: { type: 'array', items: ref('VaultSecret') }, has_more: { type: 'boolean' } }),
  VaultSecretOne: strictObject({ data: ref('VaultSecret') }),
  VaultSecretCopies: strictObject({ data: { type: 'array', items: ref('VaultSecret') } }),
  VaultSecretWrite: {
    ...requestSchemaOf(vaultSecretWriteSchema),
    description:
      '`value`: 1-65536 characters. `hosts`: 1-100 hostnames, each lowercased and its trailing dot removed, duplicates ' +
      'collapsed; a scheme, port, path, `*` or empty entry: 400. Released only to exactly these hosts.',
  },
  VaultCopyRequest: { ...requestSchemaOf(vaultCopySchema), description: '`names`: 1-100 distinct workspace secret names.' },
};
