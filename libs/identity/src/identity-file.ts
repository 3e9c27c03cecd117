/**
 * The `admin apply` file (CONTRACT section 11): its shape, checked with zod before anything is written.
 * References that may point at rows already in the database are checked when it is applied (identity-file.apply.ts).
 */
import { z } from 'zod';
import { DomainError, UUID_PATTERN } from '@interns/contracts';

export const APPLIED_KEY_KINDS = ['user', 'organization', 'management'] as const;
export type AppliedKeyKind = (typeof APPLIED_KEY_KINDS)[number];

const id = z.string().min(1, 'must be a non-empty string').max(200, 'must be at most 200 characters');
const uuid = z.string().regex(UUID_PATTERN, 'must be a uuid');

/** Three dot-separated parts is how the resolver recognises a JWT, so no API key may look like one. */
export function looksLikeJwt(credential: string): boolean {
  return credential.split('.').length === 3;
}

export const apiKeyPlaintext = z
  .string()
  .min(1, 'must be a non-empty string')
  .max(512, 'must be at most 512 characters')
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
  .refine((value) => !looksLikeJwt(value), 'must not have three dot-separated parts (that is a JWT)');

const organizationSchema = z.strictObject({
  id,
  name: z.string().min(1, 'must be a non-empty string').max(200, 'must be at most 200 characters'),
  programme: z.boolean(),
  lifecycle_writes: z.boolean(),
  chatapp_install_required: z.boolean().optional(),
});

const workspaceSchema = z.strictObject({
  id: uuid,
  organization_id: id,
  name: z.string().min(1, 'must be a non-empty string').max(200, 'must be at most 200 characters'),
});

const memberSchema = z.strictObject({
  id,
  organization_id: id,
  active: z.boolean(),
});

const apiKeySchema = z
  .strictObject({
    key: apiKeyPlaintext,
    kind: z.enum(APPLIED_KEY_KINDS),
    organization_id: id,
    workspace_id: uuid.optional(),
    member_id: id.optional(),
    disabled: z.boolean().optional(),
  })
  .superRefine((key, ctx) => {
    if (key.kind === 'user' && key.member_id === undefined) {
      ctx.addIssue({ code: 'custom', path: ['member_id'], message: 'is required on user keys' });
    }
    if (key.kind !== 'user' && key.member_id !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['member_id'], message: 'is allowed on user keys only' });
    }
    if (key.kind !== 'management' && key.workspace_id === undefined) {
      ctx.addIssue({ code: 'custom', path: ['workspace_id'], message: `is required on ${key.kind} keys` });
    }
  });

function uniqueBy<T>(items: T[], pick: (item: T) => string, ctx: z.RefinementCtx, section: string, field: string) {
  const seen = new Set<string>();
  items.forEach((item, index) => {
    const value = pick(item);
    if (seen.has(value)) ctx.addIssue({ code: 'custom', path: [section, index, field], message: 'is a duplicate' });
    seen.add(value);
  });
}

const identityFileSchema = z
  .strictObject({
    organizations: z.array(organizationSchema).default([]),
    workspaces: z.array(workspaceSchema).default([]),
    members: z.array(memberSchema).default([]),
    api_keys: z.array(apiKeySchema).default([]),
  })
  .superRefine((file, ctx) => {
    uniqueBy(file.organizations, (o) => o.id, ctx, 'organizations', 'id');
    uniqueBy(file.workspaces, (w) => w.id.toLowerCase(), ctx, 'workspaces', 'id');
    uniqueBy(file.members, (m) => m.id, ctx, 'members', 'id');
    uniqueBy(file.api_keys, (k) => k.key, ctx, 'api_keys', 'key');
  });

export type IdentityFile = z.output<typeof identityFileSchema>;
export type IdentityFileInput = z.input<typeof identityFileSchema>;

/** `api_keys.2.member_id` reads worse than `api_keys[2].member_id` in an error message. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  return path.reduce<string>((text, part) => {
    if (typeof part === 'number') return `${text}[${part}]`;
    return text === '' ? String(part) : `${text}.${String(part)}`;
  }, '');
}

export function invalidFile(path: ReadonlyArray<PropertyKey>, message: string): DomainError {
  const where = formatPath(path);
  return new DomainError('invalid_body', where === '' ? message : `${where}: ${message}`);
}

/** Returns the typed file or throws DomainError('invalid_body', '<path>: <problem>') naming the first problem. */
export function parseIdentityFile(value: unknown): IdentityFile {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidFile([], 'the file must hold a JSON object');
  }
  const result = identityFileSchema.safeParse(value);
  if (result.success) {
    // PostgreSQL prints uuids in lowercase; comparing references is simpler when the file does too.
    const data = result.data;
    for (const workspace of data.workspaces) workspace.id = workspace.id.toLowerCase();
    for (const key of data.api_keys) if (key.workspace_id) key.workspace_id = key.workspace_id.toLowerCase();
    return data;
  }
  const issue = result.error.issues[0];
  if (!issue) throw invalidFile([], 'invalid file');
  if (issue.code === 'unrecognized_keys') {
    throw invalidFile(issue.path, `unknown field ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}`);
  }
  throw invalidFile(issue.path, issue.message);
}
