/**
 * End to end: an intern's egress policy (interface section 19) through the real gateway and lifecycle. The empty
 * default, a replace with its normalization, every entry rule, who may read and who may write (an intern key reads
 * its own intern's and never writes), the intern route checks in their order, the policy kept across suspend and
 * provision, recorded as the intern's events, and gone with the intern.
 */
import { randomUUID } from 'node:crypto';
import { Platform } from '@interns/testing';
import {
  API,
  createIntern,
  createRunningIntern,
  eventually,
  IDENTITIES,
  KEYS,
  oauthToken,
  query,
} from '@interns/testing/e2e';

let platform: Platform;
let oauth: { interns: string; vaultOnly: string };

const egressPath = (internId: string) => `${API}/interns/${internId}/egress`;
const getPolicy = (internId: string, token: string = KEYS.alice) => platform.api(egressPath(internId), { token });
const putPolicy = (internId: string, json: unknown, token: string = KEYS.alice) => platform.api(egressPath(internId), { method: 'PUT', token, json });

function expectRefused(answer: { status: number; body: { error?: { metadata?: { reason?: string } } } }, status: number, reason: string): void {
  expect({ status: answer.status, reason: answer.body.error?.metadata?.reason }).toEqual({ status, reason });
}

async function internKeyOf(internId: string): Promise<string> {
  return (await platform.admin<{ key: string }>('intern-key', '--intern', internId)).key;
}

function policyEvents(internId: string): Promise<{ data: { allow: string[] } }[]> {
  return query(platform, `SELECT data FROM lifecycle.events WHERE stream_id = $1 AND type = 'EgressPolicyChanged' ORDER BY stream_version`, [
    `intern-${internId}`,
  ]);
}

beforeAll(async () => {
  platform = await Platform.start();
  await platform.applyIdentities(IDENTITIES);
  oauth = { interns: await oauthToken(platform, 'interns'), vaultOnly: await oauthToken(platform, 'vault:read') };
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

describe('the policy', () => {
  it('is empty for a new intern', async () => {
    const internId = await createIntern(platform);
    const answer = await getPolicy(internId);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 200, body: { allow: [] } });
  });

  it('is replaced whole, normalized (lowercase, no trailing dot, first of duplicates, order kept), and read back so', async () => {
    const internId = await createIntern(platform);
    const put = await putPolicy(internId, { allow: ['PyPI.org.', '*.GitHub.com', 'api.openai.com', 'pypi.org', '*.github.com.'] });
    const stored = ['pypi.org', '*.github.com', 'api.openai.com'];
    expect({ status: put.status, body: put.body }).toEqual({ status: 200, body: { allow: stored } });
    expect((await getPolicy(internId, KEYS.org)).body).toEqual({ allow: stored });

    const replaced = await putPolicy(internId, { allow: ['registry.npmjs.org'] }, KEYS.org);
    expect(replaced.body).toEqual({ allow: ['registry.npmjs.org'] });
    const emptied = await putPolicy(internId, { allow: [] }, oauth.interns);
    expect({ status: emptied.status, body: emptied.body }).toEqual({ status: 200, body: { allow: [] } });
    expect((await getPolicy(internId)).body).toEqual({ allow: [] });
  });

  it('records each change as an event of the intern, and the same list again as none (still 200)', async () => {
    const internId = await createIntern(platform);
    expect((await putPolicy(internId, { allow: ['api.github.com'] })).status).toBe(200);
    const before = (await platform.api(`${API}/interns/${internId}`, { token: KEYS.alice })).body;
    const again = await putPolicy(internId, { allow: ['API.github.com.'] });
    expect({ status: again.status, body: again.body }).toEqual({ status: 200, body: { allow: ['api.github.com'] } });
    expect(await policyEvents(internId)).toEqual([{ data: { allow: ['api.github.com'], at: expect.any(String) } }]);
    // Nothing changed, so the intern was not touched either.
    expect((await platform.api(`${API}/interns/${internId}`, { token: KEYS.alice })).body.updated_at).toBe(before.updated_at);
  });

  it('takes 100 entries and no more', async () => {
    const internId = await createIntern(platform);
    const hundred = Array.from({ length: 100 }, (_, i) => `h${i}.example.com`);
    expect((await putPolicy(internId, { allow: hundred })).body.allow).toHaveLength(100);
    const refused = await putPolicy(internId, { allow: [...hundred, 'one-more.example.com'] });
    expectRefused(refused, 400, 'invalid_body');
    expect(refused.body.error.message).toBe('allow: allow must hold at most 100 entries');
  });
});

describe('the rules of an entry', () => {
  let internId: string;
  beforeAll(async () => {
    internId = await createIntern(platform);
  });

  it.each([
    ['an empty entry', '', 'is empty'],
    ['a scheme', 'https://api.github.com', 'has a scheme'],
    ['a port', 'api.github.com:443', 'has a port'],
    ['a path', 'api.github.com/repos', 'has a path'],
    ['a bare *', '*', 'is a bare *'],
    ['a * anywhere but the first label', 'api.*.github.com', 'has a * other than as the first label of *.<domain>'],
    ['a wildcard over a top-level domain', '*.com', 'opens a whole top-level domain'],
    ['an IPv4 address', '192.0.2.10', 'is an IP address; egress is allowed by hostname only'],
    ['an IPv6 address', '[2001:db8::1]', 'is an IP address; egress is allowed by hostname only'],
    ['a label of 64 characters', `${'a'.repeat(64)}.example.com`, 'is not a hostname'],
    ['a hyphen at the end of a label', 'api-.github.com', 'is not a hostname'],
  ])('refuses %s with 400 naming the rule', async (_case, entry, rule) => {
    const answer = await putPolicy(internId, { allow: ['ok.example.com', entry] });
    expectRefused(answer, 400, 'invalid_body');
    expect(answer.body.error.message).toContain(`allow.1: ${JSON.stringify(entry)} ${rule}`);
  });

  it.each([
    ['no allow', {}, 'allow: allow must be a list of hostnames and *.<domain> entries'],
    ['an entry that is not a string', { allow: [443] }, 'allow.0: each entry must be a string'],
    ['an unknown field', { allow: [], deny: ['x.example.com'] }, 'unknown field: deny'],
    ['a body that is not an object', ['api.github.com'], 'body must be a JSON object'],
  ])('refuses %s with 400', async (_case, body, message) => {
    const answer = await putPolicy(internId, body);
    expectRefused(answer, 400, 'invalid_body');
    expect(answer.body.error.message).toBe(message);
  });

  it('answers 415 to a body that is not JSON, 400 to no body, and 413 past the size limit, changing nothing', async () => {
    const raw = (body: string, headers: Record<string, string>) => platform.api(egressPath(internId), { method: 'PUT', token: KEYS.alice, raw: body, headers });
    expectRefused(await raw('{"allow":[]}', { 'content-type': 'text/plain' }), 415, 'unsupported_media_type');
    expectRefused(await raw('', {}), 400, 'invalid_body');
    expectRefused(await raw('{"allow":', { 'content-type': 'application/json' }), 400, 'invalid_body');
    expectRefused(await putPolicy(internId, { allow: ['x'.repeat(1_048_600)] }), 413, 'payload_too_large');
    expect((await getPolicy(internId)).body).toEqual({ allow: [] });
  });
});

describe('who may read and write it', () => {
  it("lets an intern key read its own intern's policy and no other's, and never write one (403, even its own)", async () => {
    const internId = await createIntern(platform);
    const otherId = await createIntern(platform);
    expect((await putPolicy(internId, { allow: ['pypi.org'] })).status).toBe(200);
    const key = await internKeyOf(internId);

    expect((await getPolicy(internId, key)).body).toEqual({ allow: ['pypi.org'] });
    expectRefused(await getPolicy(otherId, key), 404, 'not_found');

    const own = await putPolicy(internId, { allow: ['*.example.org'] }, key);
    expect(own.body).toEqual({
      error: { code: 403, message: 'an intern key cannot change an egress policy', metadata: { reason: 'forbidden', retryable: false } },
    });
    // The same answer for another intern, and before the body is looked at.
    expectRefused(await putPolicy(otherId, { allow: ['*.example.org'] }, key), 403, 'forbidden');
    expectRefused(await putPolicy(internId, { allow: ['*'] }, key), 403, 'forbidden');
    expect((await getPolicy(internId)).body).toEqual({ allow: ['pypi.org'] });
  });

  it('answers 404 for another workspace, an unknown intern and an id that is not a uuid', async () => {
    const internId = await createIntern(platform);
    expectRefused(await getPolicy(internId, KEYS.aliceOther), 404, 'not_found');
    expectRefused(await putPolicy(internId, { allow: [] }, KEYS.aliceOther), 404, 'not_found');
    expectRefused(await getPolicy(randomUUID()), 404, 'not_found');
    expectRefused(await putPolicy(randomUUID(), { allow: [] }), 404, 'not_found');
    expectRefused(await getPolicy('not-a-uuid'), 404, 'not_found');
    expectRefused(await putPolicy('not-a-uuid', { allow: [] }), 404, 'not_found');
    // The body rules come before visibility, as on every intern route.
    expectRefused(await putPolicy(randomUUID(), { allow: ['*'] }), 400, 'invalid_body');
  });

  it("refuses a put with 404 while the organization's lifecycle writes are off, before the body rules", async () => {
    expectRefused(await putPolicy(randomUUID(), { allow: [] }, KEYS.readonly), 404, 'not_found');
    expectRefused(await putPolicy(randomUUID(), { allow: ['*'] }, KEYS.readonly), 404, 'not_found');
  });

  it('answers 401 to a management key or none, 403 to an inactive member or a token without `interns`, 404 outside the programme', async () => {
    const internId = await createIntern(platform);
    expect((await getPolicy(internId, KEYS.management)).status).toBe(401);
    expect((await putPolicy(internId, { allow: [] }, KEYS.management)).status).toBe(401);
    expect((await getPolicy(internId, '')).status).toBe(401);
    expectRefused(await getPolicy(internId, KEYS.carolInactive), 403, 'forbidden');
    expectRefused(await putPolicy(internId, { allow: [] }, oauth.vaultOnly), 403, 'insufficient_scope');
    expectRefused(await getPolicy(internId, KEYS.outside), 404, 'not_found');
    expect((await getPolicy(internId, oauth.interns)).status).toBe(200);
  });
});

describe('with the intern', () => {
  it('survives a suspend and a provision', async () => {
    const internId = await createRunningIntern(platform, KEYS.alice, 60_000);
    expect((await putPolicy(internId, { allow: ['api.github.com', '*.pythonhosted.org'] })).status).toBe(200);
    expect((await platform.api(`${API}/interns/${internId}/suspend`, { method: 'POST', token: KEYS.alice })).status).toBe(200);
    expect((await getPolicy(internId)).body).toEqual({ allow: ['api.github.com', '*.pythonhosted.org'] });
    // A stopped intern's policy may change: it is configuration, not the runtime's.
    expect((await putPolicy(internId, { allow: ['api.github.com'] })).status).toBe(200);
    expect((await platform.api(`${API}/interns/${internId}/provision`, { method: 'POST', token: KEYS.alice })).status).toBe(202);
    await eventually(
      () => platform.api(`${API}/interns/${internId}`, { token: KEYS.alice }),
      (answer) => answer.body.status === 'running',
      60_000,
    );
    expect((await getPolicy(internId)).body).toEqual({ allow: ['api.github.com'] });
  }, 120_000);

  it('is gone with the intern', async () => {
    const internId = await createIntern(platform);
    expect((await putPolicy(internId, { allow: ['pypi.org'] })).status).toBe(200);
    expect((await platform.api(`${API}/interns/${internId}`, { method: 'DELETE', token: KEYS.alice })).status).toBe(202);
    await eventually(
      () => getPolicy(internId),
      (answer) => answer.status === 404,
      30_000,
    );
    expectRefused(await putPolicy(internId, { allow: [] }), 404, 'not_found');
    expect(await query(platform, 'SELECT 1 FROM lifecycle.interns WHERE id = $1', [internId])).toEqual([]);
  });
});
