import type { InternOwnerReply } from '@interns/contracts';
import type { IdentityStore } from '@interns/identity';
import { parseFlags, requireUuidFlag } from './command-args';

export interface InternKeyOptions {
  internId: string;
  key: string | undefined;
}

/** Asks the lifecycle service which organization and workspace an intern belongs to. */
export type InternOwnerLookup = (internId: string) => Promise<InternOwnerReply>;

export function parseInternKeyArgs(args: string[]): InternKeyOptions {
  const { values } = parseFlags('intern-key', args, { intern: { type: 'string' }, key: { type: 'string' } });
  return { internId: requireUuidFlag('intern-key', 'intern', values.intern), key: values.key };
}

/** `intern-key --intern <id> [--key <plaintext>]`: an API key that reaches only this one intern. */
export async function runInternKey(
  options: InternKeyOptions,
  lookUpOwner: InternOwnerLookup,
  store: () => Promise<IdentityStore>,
): Promise<{ key: string }> {
  // Ask lifecycle first: an unknown intern fails before the database is even opened.
  const owner = await lookUpOwner(options.internId);
  const key = await (await store()).createInternKey({
    internId: options.internId,
    organizationId: owner.organizationId,
    workspaceId: owner.workspaceId,
    ...(options.key === undefined ? {} : { key: options.key }),
  });
  return { key };
}
