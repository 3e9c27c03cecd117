/**
 * End to end: an intern's egress log (interface section 19) through the real gateway, egress service and lifecycle.
 * Entries only come from traffic through the egress proxy, so here they are written straight into `egress.log` as the
 * proxy's sink writes them: the empty log, every key of an entry with its type, newest first, paging by cursor, the
 * query rules, who may read it (whoever may read the intern's egress policy), the log going with its intern, and the
 * answer while the egress service is down.
 */
import { randomUUID } from 'node:crypto';
import { Platform } from '@interns/testing';
import { API, createIntern, eventually, IDENTITIES, KEYS, oauthToken, query } from '@interns/testing/e2e';

let platform: Platform;
let oauth: { interns: string; vaultOnly: string };

interface SeededEntry {
  at: string;
  run_id: string | null;
  host: string;
  port: number;
  method: string | null;
  path: string | null;
  decision: 'allowed' | 'denied';
  reason: string | null;
  secrets: string[];
  status: number | null;
  bytes_out: number;
  bytes_in: number;
}

const logPath = (internId: string, search = '') => `${API}/interns/${internId}/egress/log${search}`;
const getLog = (internId: string, search = '', token: string = KEYS.alice) => platform.api(logPath(internId, search), { token });

function expectRefused(answer: { status: number; body: { error?: { metadata?: { reason?: string } } } }, status: number, reason: string): void {
  expect({ status: answer.status, reason: answer.body.error?.metadata?.reason }).toEqual({ status, reason });
}

const invalid = (message: string) => ({ error: { code: 400, message, metadata: { reason: 'invalid_body', retryable: false } } });

/** Writes entries of `internId` oldest first, as the proxy's sink appends them; answers each with its id. */
async function seed(internId: string, entries: SeededEntry[]): Promise<(SeededEntry & { id: string })[]> {
  const written: (SeededEntry & { id: string })[] = [];
  for (const entry of entries) {
    const id = randomUUID();
    const { run_id, at, host, port, method, path, decision, reason, secrets, status, bytes_out, bytes_in } = entry;
    await query(
      platform,
      `INSERT INTO egress.log (id, intern_id, run_id, at, host, port, method, path, decision, reason, secrets, status, bytes_out, bytes_in)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
      [id, internId, run_id, at, host, port, method, path, decision, reason, secrets, status, bytes_out, bytes_in],
    );
    written.push({ id, ...entry });
  }
  return written;
}

/** A tunnelled request (nothing of HTTP seen), a request with a secret released (TLS terminated), a refusal. */
function threeEntries(): SeededEntry[] {
  return [
    {
      at: '2026-03-01T10:00:00.125Z',
      run_id: null,
      host: 'pypi.org',
      port: 443,
      method: null,
      path: null,
      decision: 'allowed',
      reason: null,
      secrets: [],
      status: null,
      bytes_out: 517,
      bytes_in: 20_480,
    },
    {
      at: '2026-03-01T10:00:01.500Z',
      run_id: randomUUID(),
      host: 'api.github.com',
      port: 443,
      method: 'GET',
      path: '/user/repos',
      decision: 'allowed',
      reason: null,
      secrets: ['github_token', 'npm_token'],
      status: 200,
      // Past 32 bits: bigint columns answer as JSON integers.
      bytes_out: 812,
      bytes_in: 5_000_000_000,
    },
    {
      at: '2026-03-01T10:00:02.000Z',
      run_id: randomUUID(),
      host: 'uploads.example.net',
      port: 80,
      method: 'POST',
      path: '/drop',
      decision: 'denied',
      reason: 'egress_denied: secret github_token is not released to uploads.example.net',
      secrets: ['github_token'],
      status: null,
      bytes_out: 0,
      bytes_in: 0,
    },
  ];
}

beforeAll(async () => {
  platform = await Platform.start();
  await platform.applyIdentities(IDENTITIES);
  oauth = { interns: await oauthToken(platform, 'interns'), vaultOnly: await oauthToken(platform, 'vault:read') };
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

describe('the log', () => {
  it('is empty for a new intern, with no next_cursor', async () => {
    const internId = await createIntern(platform);
    const answer = await getLog(internId);
    expect({ status: answer.status, body: answer.body }).toStrictEqual({ status: 200, body: { data: [], has_more: false } });
    expect(answer.text).toBe('{"data":[],"has_more":false}');
  });

  it('answers every key of an entry with its type, newest first, and pages by cursor', async () => {
    const internId = await createIntern(platform);
    const [oldest, middle, newest] = await seed(internId, threeEntries());
    // Another intern's entries never show.
    await seed(await createIntern(platform), threeEntries());

    const first = await getLog(internId, '?limit=2');
    expect(first.status).toBe(200);
    expect(first.body).toStrictEqual({ data: [newest, middle], has_more: true, next_cursor: expect.any(String) });
    expect(first.text).toContain('"bytes_in":5000000000');

    const second = await getLog(internId, `?limit=2&starting_after=${encodeURIComponent(first.body.next_cursor)}`);
    expect({ status: second.status, body: second.body }).toStrictEqual({ status: 200, body: { data: [oldest], has_more: false } });

    const whole = await getLog(internId);
    expect(whole.body).toStrictEqual({ data: [newest, middle, oldest], has_more: false });
  });

  it('orders by when the proxy recorded an entry, not by its `at`', async () => {
    const internId = await createIntern(platform);
    const [early, late] = threeEntries();
    // A request that arrived first but ended (and was recorded) last is the newest entry.
    const [recordedFirst, recordedLast] = await seed(internId, [late, { ...early, at: '2026-03-01T09:59:59.000Z' }]);
    expect((await getLog(internId)).body.data.map((entry: { id: string }) => entry.id)).toEqual([recordedLast.id, recordedFirst.id]);
  });

  it('pages exactly at the limit: a full last page has no more', async () => {
    const internId = await createIntern(platform);
    const seeded = await seed(internId, threeEntries().slice(0, 2));
    const page = await getLog(internId, '?limit=2');
    expect(page.body).toStrictEqual({ data: [seeded[1], seeded[0]], has_more: false });
  });
});

describe('the query', () => {
  let internId: string;
  beforeAll(async () => {
    internId = await createIntern(platform);
    await seed(internId, threeEntries());
  });

  it.each(['0', '501', 'abc', '2.5', '-1', ''])('refuses limit=%j with 400 naming the range', async (limit) => {
    const answer = await getLog(internId, `?limit=${limit}`);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 400, body: invalid('limit must be an integer 1-500') });
  });

  it('takes limit 1 and 500', async () => {
    const one = await getLog(internId, '?limit=1');
    expect({ status: one.status, length: one.body.data.length, has_more: one.body.has_more }).toEqual({ status: 200, length: 1, has_more: true });
    const all = await getLog(internId, '?limit=500');
    expect({ status: all.status, length: all.body.data.length, has_more: all.body.has_more }).toEqual({ status: 200, length: 3, has_more: false });
  });

  it('refuses a parameter given twice', async () => {
    const answer = await getLog(internId, '?limit=1&limit=2');
    expect(answer.body).toEqual(invalid('limit may be given once'));
  });

  it.each([
    ['not a cursor', 'garbage'],
    ['empty', ''],
    ['a tampered cursor', 'WyIyMDI2LTAzLTAxVDEwOjAwOjAwLjEyNVoiLCIxIiwieCJd.c2lnbmF0dXJl'],
  ])('refuses a starting_after that is %s with 400', async (_case, cursor) => {
    const answer = await getLog(internId, `?starting_after=${encodeURIComponent(cursor)}`);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 400, body: invalid('starting_after is not a valid cursor') });
  });

  it("refuses another intern's cursor", async () => {
    const otherId = await createIntern(platform);
    await seed(otherId, threeEntries());
    const cursor = (await getLog(otherId, '?limit=1')).body.next_cursor as string;
    expect(cursor).toEqual(expect.any(String));
    expect((await getLog(internId, `?starting_after=${encodeURIComponent(cursor)}`)).body).toEqual(invalid('starting_after is not a valid cursor'));
  });

  it('ignores unknown parameters', async () => {
    const answer = await getLog(internId, '?decision=denied&limit=2');
    expect({ status: answer.status, length: answer.body.data.length }).toEqual({ status: 200, length: 2 });
  });
});

describe('who may read it', () => {
  it("lets the workspace's keys and tokens, and the intern's own key, read it; another intern's key gets 404", async () => {
    const internId = await createIntern(platform);
    const otherId = await createIntern(platform);
    const seeded = await seed(internId, threeEntries().slice(0, 1));
    const { key } = await platform.admin<{ key: string }>('intern-key', '--intern', internId);
    for (const token of [KEYS.alice, KEYS.bob, KEYS.org, oauth.interns, key]) {
      const answer = await getLog(internId, '', token);
      expect({ status: answer.status, body: answer.body }).toStrictEqual({ status: 200, body: { data: seeded, has_more: false } });
    }
    expectRefused(await getLog(otherId, '', key), 404, 'not_found');
  });

  it('answers 404 for another workspace, an unknown intern and an id that is not a uuid, even with a bad cursor', async () => {
    const internId = await createIntern(platform);
    await seed(internId, threeEntries());
    expectRefused(await getLog(internId, '', KEYS.aliceOther), 404, 'not_found');
    expectRefused(await getLog(internId, '?starting_after=garbage', KEYS.aliceOther), 404, 'not_found');
    expectRefused(await getLog(randomUUID()), 404, 'not_found');
    expectRefused(await getLog('not-a-uuid'), 404, 'not_found');
    // The query rules come before visibility, as on the runs list.
    expectRefused(await getLog(randomUUID(), '?limit=0'), 400, 'invalid_body');
  });

  it('answers 401 to a management key or none, 403 to an inactive member or a token without `interns`, 404 outside the programme', async () => {
    const internId = await createIntern(platform);
    const management = await getLog(internId, '', KEYS.management);
    expect({ status: management.status, body: management.body }).toEqual({ status: 401, body: { error: { code: 401, message: 'invalid or missing API key' } } });
    expect((await getLog(internId, '', '')).status).toBe(401);
    expectRefused(await getLog(internId, '', KEYS.carolInactive), 403, 'forbidden');
    expectRefused(await getLog(internId, '', oauth.vaultOnly), 403, 'insufficient_scope');
    expectRefused(await getLog(internId, '', KEYS.outside), 404, 'not_found');
  });
});

describe('with the intern', () => {
  it("goes when the intern's teardown completes", async () => {
    const internId = await createIntern(platform);
    await seed(internId, threeEntries());
    expect((await platform.api(`${API}/interns/${internId}`, { method: 'DELETE', token: KEYS.alice })).status).toBe(202);
    await eventually(
      () => query(platform, 'SELECT 1 FROM lifecycle.interns WHERE id = $1', [internId]),
      (rows) => rows.length === 0,
      30_000,
    );
    expect(await query(platform, 'SELECT id FROM egress.log WHERE intern_id = $1', [internId])).toEqual([]);
    expectRefused(await getLog(internId), 404, 'not_found');
  });
});

describe('while the egress service is down', () => {
  it('answers 500 internal_error at once, retryable, and the log again once it is back', async () => {
    const internId = await createIntern(platform);
    await platform.stopService('egress');
    const started = Date.now();
    const down = await getLog(internId);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(down.body).toEqual({ error: { code: 500, message: expect.any(String), metadata: { reason: 'internal_error', retryable: true } } });
    expect(down.headers.get('retry-after')).toMatch(/^\d+$/);

    await platform.startService('egress');
    expect((await getLog(internId)).body).toStrictEqual({ data: [], has_more: false });
  }, 60_000);
});
