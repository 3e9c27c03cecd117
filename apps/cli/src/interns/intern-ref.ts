/**
 * `<intern>` on the command line: an id (used as it is) or a name, looked up in the credential's list of interns.
 * Names are unique per creator, so two members' interns (or an organization key's) may share one: then the
 * caller must use an id. An intern key cannot list (404 on the collection): it names its intern by id.
 */
import type { InternList, InternView } from '@interns/contracts';
import { LIST_MAX_LIMIT } from '@interns/contracts';
import { ApiError, CliError, EXIT } from '../errors';
import type { ApiClient } from '../http/api-client';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Pages read while looking for a name: MAX_INTERNS_PER_WORKSPACE (100) fits in one. */
const MAX_PAGES = 20;

export function isUuid(text: string): boolean {
  return UUID.test(text);
}

/** The intern's id: `ref` itself when it is one, else the id of the one intern with that name. */
export async function resolveInternId(client: ApiClient, ref: string): Promise<string> {
  if (isUuid(ref)) return ref.toLowerCase();
  const matches = (await listAllInterns(client, 'looking up an intern by name')).filter((intern) => intern.name === ref);
  if (matches.length === 1) return matches[0].id;
  if (matches.length === 0) throw new CliError(`no intern named "${ref}" in this workspace`, EXIT.notFound, 'not_found');
  throw CliError.usage(`${matches.length} interns are named "${ref}" (${matches.map((intern) => intern.id).join(', ')}): give an id`);
}

/** Every intern the credential sees, newest first, following the cursor. */
export async function listAllInterns(client: ApiClient, purpose = 'listing interns'): Promise<InternView[]> {
  const interns: InternView[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    let list: InternList;
    try {
      list = await client.get<InternList>('/interns', { limit: LIST_MAX_LIMIT, starting_after: cursor });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) {
        throw new CliError(`${purpose} needs a credential that can list interns (an intern key names its intern by id)`, EXIT.notFound, 'not_found');
      }
      throw error;
    }
    interns.push(...list.data);
    if (!list.has_more || list.next_cursor === undefined) return interns;
    cursor = list.next_cursor;
  }
  return interns;
}
