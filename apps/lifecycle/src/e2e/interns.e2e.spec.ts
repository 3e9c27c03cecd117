/**
 * End to end: the four services as real processes, driven over HTTP exactly as a client would
 * (CONTRACT sections 1-4: create, get, list, update for every credential kind).
 */
import { randomUUID } from 'node:crypto';
import { Platform } from '@interns/testing';
import { IDENTITIES, INTERN_KEYS, ISO_MS, KEYS, UUID, WS_MAIN, WS_OTHER } from '@interns/testing/e2e';

const API = '/api/v1';
let platform: Platform;

const create = (token: string, json: unknown, headers: Record<string, string> = {}) =>
  platform.api(`${API}/interns`, { token, json, headers });
const get = (token: string, id: string) => platform.api(`${API}/interns/${id}`, { token });
const patch = (token: string, id: string, json: unknown) =>
  platform.api(`${API}/interns/${id}`, { token, json, method: 'PATCH' });
const list = (token: string, query = '') => platform.api(`${API}/interns${query}`, { token });

function refusal(status: number, reason: string, retryable = false) {
  return { error: { code: status, message: expect.any(String), metadata: { reason, retryable } } };
}

let sequence = 0;
const uniqueName = (stem = 'intern') => `${stem}-${(sequence += 1)}-${randomUUID().slice(0, 6)}`;

beforeAll(async () => {
  platform = await Platform.start();
  await platform.applyIdentities(IDENTITIES);
});

afterAll(async () => {
  await platform?.stop();
});

describe('create', () => {
  it('answers 201 with every key of the Intern, nullable ones as null', async () => {
    const name = uniqueName('ada');
    const response = await create(KEYS.alice, { name });
    expect(response.status).toBe(201);
    const intern = response.body;
    expect(Object.keys(intern).sort()).toEqual(INTERN_KEYS);
    expect(intern).toMatchObject({
      name,
      description: null,
      instructions: null,
      model: null,
      status: 'stopped',
      last_failure_message: null,
      progress: null,
      hostname: null,
      workspace_id: WS_MAIN,
      attached_vault_id: null,
    });
    expect(intern.id).toMatch(UUID);
    expect(intern.vault_id).toMatch(UUID);
    expect(intern.created_at).toMatch(ISO_MS);
    expect(intern.updated_at).toBe(intern.created_at);
  });

  it('stores every given field', async () => {
    const body = { name: uniqueName(), description: 'writes docs', instructions: 'be brief', model: 'openai/gpt-4.1', provision: false };
    const response = await create(KEYS.alice, body);
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ description: 'writes docs', instructions: 'be brief', model: 'openai/gpt-4.1' });
  });

  it('refuses a name the same creator already uses in the workspace, but not another creator', async () => {
    const name = uniqueName('dup');
    expect((await create(KEYS.alice, { name })).status).toBe(201);
    const again = await create(KEYS.alice, { name });
    expect(again.status).toBe(409);
    expect(again.body).toEqual(refusal(409, 'name_taken'));
    expect((await create(KEYS.bob, { name })).status).toBe(201);
    // Organization keys create creator-less interns; their names are unique among themselves.
    expect((await create(KEYS.org, { name })).status).toBe(201);
    expect((await create(KEYS.org, { name })).body).toEqual(refusal(409, 'name_taken'));
    // Another workspace is another namespace.
    expect((await create(KEYS.aliceOther, { name })).status).toBe(201);
  });

  it('gives exactly one winner when the same name is created concurrently', async () => {
    const name = uniqueName('race');
    const answers = await Promise.all(Array.from({ length: 8 }, () => create(KEYS.alice, { name })));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
  });

  it.each([
    ['missing name', {}],
    ['too short', { name: 'a' }],
    ['too long', { name: 'x'.repeat(41) }],
    ['uppercase', { name: 'Ada' }],
    ['double hyphen', { name: 'ada--b' }],
    ['leading digit', { name: '9ada' }],
    ['long description', { name: 'ada', description: 'x'.repeat(2001) }],
    ['long instructions', { name: 'ada', instructions: 'x'.repeat(100001) }],
    ['model without author', { name: 'ada', model: 'no-slash' }],
    ['model too long', { name: 'ada', model: `a/${'m'.repeat(199)}` }],
    ['mistyped provision', { name: 'ada', provision: 'yes' }],
    ['vault_id not uuid', { name: 'ada', vault_id: 'not-a-uuid' }],
    ['workspace_id not uuid', { name: 'ada', workspace_id: 'nope' }],
    ['unknown field', { name: 'ada', colour: 'blue' }],
    ['mistyped name', { name: 42 }],
    ['an array', ['ada']],
  ])('answers 400 invalid_body for %s', async (_label, body) => {
    const response = await create(KEYS.alice, body);
    expect(response.status).toBe(400);
    expect(response.body).toEqual(refusal(400, 'invalid_body'));
  });

  it('accepts its own workspace_id and answers 404 for another workspace', async () => {
    expect((await create(KEYS.alice, { name: uniqueName(), workspace_id: WS_MAIN })).status).toBe(201);
    const foreign = await create(KEYS.alice, { name: uniqueName(), workspace_id: WS_OTHER });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(refusal(404, 'not_found'));
  });

  it('attaches the vault of another visible intern, and refuses any other vault', async () => {
    const owner = (await create(KEYS.alice, { name: uniqueName('owner') })).body;
    const borrower = await create(KEYS.bob, { name: uniqueName('borrower'), vault_id: owner.vault_id });
    expect(borrower.status).toBe(201);
    expect(borrower.body.attached_vault_id).toBe(owner.vault_id);
    expect(borrower.body.vault_id).not.toBe(owner.vault_id);

    const unknown = await create(KEYS.alice, { name: uniqueName(), vault_id: randomUUID() });
    expect(unknown.body).toEqual(refusal(409, 'vault_not_attachable'));
    const foreign = await create(KEYS.aliceOther, { name: uniqueName(), vault_id: owner.vault_id });
    expect(foreign.body).toEqual(refusal(409, 'vault_not_attachable'));
  });

  describe('Idempotency-Key', () => {
    it('replays a finished create with 200 and the same intern', async () => {
      const key = randomUUID();
      const body = { name: uniqueName('idem'), description: 'once' };
      const first = await create(KEYS.alice, body, { 'idempotency-key': key });
      expect(first.status).toBe(201);
      const replay = await create(KEYS.alice, { description: 'once', name: body.name }, { 'idempotency-key': key });
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual(first.body);
    });

    it('answers 409 idempotency_key_reused for the same key with another body', async () => {
      const key = randomUUID();
      expect((await create(KEYS.alice, { name: uniqueName() }, { 'idempotency-key': key })).status).toBe(201);
      const reused = await create(KEYS.alice, { name: uniqueName() }, { 'idempotency-key': key });
      expect(reused.status).toBe(409);
      expect(reused.body).toEqual(refusal(409, 'idempotency_key_reused'));
    });

    it('creates one intern when the same key arrives concurrently', async () => {
      const key = randomUUID();
      const body = { name: uniqueName('idem-race') };
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => create(KEYS.alice, body, { 'idempotency-key': key })),
      );
      expect(answers.filter((a) => a.status === 201)).toHaveLength(1);
      expect(answers.filter((a) => a.status === 200)).toHaveLength(5);
      expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    });

    it('keeps keys apart per caller', async () => {
      const key = randomUUID();
      const alice = await create(KEYS.alice, { name: uniqueName() }, { 'idempotency-key': key });
      const bob = await create(KEYS.bob, { name: uniqueName() }, { 'idempotency-key': key });
      expect([alice.status, bob.status]).toEqual([201, 201]);
    });

    it('answers 400 for a key over 255 characters', async () => {
      const response = await create(KEYS.alice, { name: uniqueName() }, { 'idempotency-key': 'k'.repeat(256) });
      expect(response.body).toEqual(refusal(400, 'invalid_body'));
    });
  });
});

describe('get', () => {
  it('adds icon_sha256 and created_by_you for members, and omits created_by_you for keys', async () => {
    const created = (await create(KEYS.alice, { name: uniqueName() })).body;
    const mine = await get(KEYS.alice, created.id);
    expect(mine.status).toBe(200);
    expect(Object.keys(mine.body).sort()).toEqual([...INTERN_KEYS, 'created_by_you', 'icon_sha256'].sort());
    expect(mine.body.created_by_you).toBe(true);
    expect(mine.body.icon_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect((await get(KEYS.bob, created.id)).body.created_by_you).toBe(false);
    const byOrg = await get(KEYS.org, created.id);
    expect(byOrg.status).toBe(200);
    expect(byOrg.body).not.toHaveProperty('created_by_you');
    expect(byOrg.body.icon_sha256).toBe(mine.body.icon_sha256);
  });

  it('answers 404 for another workspace, an unknown id and a non-uuid id', async () => {
    const created = (await create(KEYS.alice, { name: uniqueName() })).body;
    expect((await get(KEYS.aliceOther, created.id)).body).toEqual(refusal(404, 'not_found'));
    expect((await get(KEYS.alice, randomUUID())).body).toEqual(refusal(404, 'not_found'));
    const malformed = await get(KEYS.alice, 'not-a-uuid');
    expect(malformed.status).toBe(404);
    expect(malformed.body).toEqual(refusal(404, 'not_found'));
  });
});

describe('update', () => {
  it('changes given fields, clears nullable ones with null and leaves omitted ones alone', async () => {
    const created = (
      await create(KEYS.alice, { name: uniqueName(), description: 'old', instructions: 'keep', model: 'a/b' })
    ).body;
    const renamed = uniqueName('renamed');
    const response = await patch(KEYS.alice, created.id, { name: renamed, description: null, model: null });
    expect(response.status).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual(INTERN_KEYS);
    expect(response.body).toMatchObject({ name: renamed, description: null, instructions: 'keep', model: null });
    expect(Date.parse(response.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    expect(response.body.created_at).toBe(created.created_at);
    expect((await get(KEYS.alice, created.id)).body).toMatchObject({ name: renamed, description: null, instructions: 'keep' });
  });

  it('accepts an empty body and changes nothing', async () => {
    const created = (await create(KEYS.alice, { name: uniqueName() })).body;
    const response = await patch(KEYS.alice, created.id, {});
    expect(response.status).toBe(200);
    expect(response.body.updated_at).toBe(created.updated_at);
  });

  it('refuses a name the creator already uses', async () => {
    const taken = uniqueName('taken');
    await create(KEYS.alice, { name: taken });
    const other = (await create(KEYS.alice, { name: uniqueName() })).body;
    expect((await patch(KEYS.alice, other.id, { name: taken })).body).toEqual(refusal(409, 'name_taken'));
  });

  it.each([
    ['null name', { name: null }],
    ['model pattern', { model: 'bad model' }],
    ['unknown field', { status: 'running' }],
    ['mistyped description', { description: 5 }],
  ])('answers 400 for %s', async (_label, body) => {
    const created = (await create(KEYS.alice, { name: uniqueName() })).body;
    expect((await patch(KEYS.alice, created.id, body)).body).toEqual(refusal(400, 'invalid_body'));
  });

  it('checks the body before visibility: bad body on an unknown intern is 400, good body 404', async () => {
    expect((await patch(KEYS.alice, randomUUID(), { colour: 'x' })).status).toBe(400);
    expect((await patch(KEYS.alice, 'not-a-uuid', { colour: 'x' })).status).toBe(400);
    expect((await patch(KEYS.alice, randomUUID(), { name: 'fine' })).body).toEqual(refusal(404, 'not_found'));
    expect((await patch(KEYS.alice, 'not-a-uuid', { name: 'fine' })).body).toEqual(refusal(404, 'not_found'));
  });
});

describe('list', () => {
  let names: string[];
  let token: string;

  beforeAll(async () => {
    // A workspace of its own keeps this listing exact.
    const workspace = randomUUID();
    token = `uk_${randomUUID()}`;
    await platform.applyIdentities({
      organizations: [],
      workspaces: [{ id: workspace, organization_id: 'acme', name: 'listing' }],
      members: [],
      api_keys: [{ key: token, kind: 'user', organization_id: 'acme', workspace_id: workspace, member_id: 'alice' }],
    });
    names = [];
    for (let i = 0; i < 5; i += 1) {
      const name = uniqueName('listed');
      names.push(name);
      expect((await create(token, { name })).status).toBe(201);
    }
  });

  it('lists newest first with has_more false and no next_cursor', async () => {
    const response = await list(token);
    expect(response.status).toBe(200);
    expect(Object.keys(response.body).sort()).toEqual(['data', 'has_more']);
    expect(response.body.has_more).toBe(false);
    expect(response.body.data.map((i: { name: string }) => i.name)).toEqual([...names].reverse());
    expect(response.body.data[0]).toHaveProperty('icon_sha256');
    expect(response.body.data[0].created_by_you).toBe(true);
  });

  it('pages with limit and next_cursor until has_more is false', async () => {
    const seen: string[] = [];
    let query = '?limit=2';
    for (let page = 0; page < 3; page += 1) {
      const response = await list(token, query);
      expect(response.status).toBe(200);
      seen.push(...response.body.data.map((i: { name: string }) => i.name));
      if (page < 2) {
        expect(response.body.has_more).toBe(true);
        expect(typeof response.body.next_cursor).toBe('string');
        query = `?limit=2&starting_after=${encodeURIComponent(response.body.next_cursor)}`;
      } else {
        expect(response.body.has_more).toBe(false);
        expect(response.body).not.toHaveProperty('next_cursor');
      }
    }
    expect(seen).toEqual([...names].reverse());
  });

  it('filters by status, with a plain or percent-encoded comma and repeats collapsed', async () => {
    expect((await list(token, '?status=stopped')).body.data).toHaveLength(5);
    expect((await list(token, '?status=running')).body.data).toHaveLength(0);
    expect((await list(token, '?status=running%2Cstopped')).body.data).toHaveLength(5);
    expect((await list(token, '?status=running,stopped,stopped')).body.data).toHaveLength(5);
    const eight = 'stopped,queued,awaiting_chatapp_install,provisioning,running,failed,destroying,destroy_failed';
    expect((await list(token, `?status=${eight}`)).status).toBe(200);
  });

  it('accepts its own workspace_id, 404 for another, and ignores unknown parameters', async () => {
    const own = (await list(token)).body.data[0].workspace_id;
    expect((await list(token, `?workspace_id=${own}&colour=blue`)).status).toBe(200);
    expect((await list(token, `?workspace_id=${WS_OTHER}`)).body).toEqual(refusal(404, 'not_found'));
  });

  it.each([
    ['?limit=0'],
    ['?limit=501'],
    ['?limit=abc'],
    ['?limit=2.5'],
    ['?status=sleeping'],
    ['?status=stopped,stopped,stopped,stopped,stopped,stopped,stopped,stopped,stopped'],
    ['?starting_after=garbage'],
    ['?workspace_id=nope'],
  ])('answers 400 invalid_body for %s', async (query) => {
    const response = await list(token, query);
    expect(response.status).toBe(400);
    expect(response.body).toEqual(refusal(400, 'invalid_body'));
  });

  it('rejects a tampered cursor and a cursor of another workspace', async () => {
    const cursor: string = (await list(token, '?limit=1')).body.next_cursor;
    const [payload, signature] = cursor.split('.');
    const forged = Buffer.from(JSON.stringify(['2999-01-01T00:00:00.000Z', randomUUID(), WS_MAIN])).toString('base64url');
    expect((await list(token, `?starting_after=${forged}.${signature}`)).status).toBe(400);
    expect((await list(token, `?starting_after=${payload}.${signature}x`)).status).toBe(400);
    // A genuine cursor, replayed by a caller of another workspace.
    expect((await list(KEYS.alice, `?starting_after=${encodeURIComponent(cursor)}`)).status).toBe(400);
  });

  it('stays correct under 50 concurrent clients', async () => {
    const answers = await Promise.all(Array.from({ length: 50 }, () => list(token, '?limit=3')));
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.body.data.map((i: { name: string }) => i.name)).toEqual([...names].reverse().slice(0, 3));
    }
  });
});

describe('intern keys', () => {
  it('reach only their own intern', async () => {
    const mine = (await create(KEYS.alice, { name: uniqueName('keyed') })).body;
    const other = (await create(KEYS.alice, { name: uniqueName() })).body;
    const { key } = await platform.admin<{ key: string }>('intern-key', '--intern', mine.id);

    const own = await get(key, mine.id);
    expect(own.status).toBe(200);
    expect(own.body).not.toHaveProperty('created_by_you');
    expect((await patch(key, mine.id, { description: 'by its key' })).body.description).toBe('by its key');
    expect((await get(key, other.id)).body).toEqual(refusal(404, 'not_found'));
    expect((await list(key)).body).toEqual(refusal(404, 'not_found'));
    expect((await create(key, { name: uniqueName() })).body).toEqual(refusal(404, 'not_found'));
  });
});

describe('integration events', () => {
  it('reach JetStream through the outbox relay, once each, with the request correlation id', async () => {
    const { connect } = await import('@nats-io/transport-node');
    const { jetstream } = await import('@nats-io/jetstream');
    const created = await create(KEYS.alice, { name: uniqueName('relayed') });
    const correlationId = created.headers.get('x-correlation-id');
    const nc = await connect({ servers: platform.env.NATS_URL });
    try {
      const stream = `${platform.env.NATS_PREFIX}_lifecycle_events`;
      const consumer = await jetstream(nc).consumers.get(stream, {
        filter_subjects: `${platform.env.NATS_PREFIX}.evt.lifecycle.intern.created`,
      });
      const seen: { id: string; type: string; workspace_id: string; correlation_id: string; data: { intern_id: string } }[] = [];
      const deadline = Date.now() + 10_000;
      while (!seen.some((e) => e.data.intern_id === created.body.id) && Date.now() < deadline) {
        const batch = await consumer.fetch({ max_messages: 500, expires: 1000 });
        for await (const message of batch) seen.push(message.json());
      }
      const mine = seen.filter((e) => e.data.intern_id === created.body.id);
      expect(mine).toHaveLength(1);
      expect(mine[0]).toMatchObject({ type: 'intern.created', workspace_id: created.body.workspace_id, correlation_id: correlationId });
    } finally {
      await nc.close();
    }
  });
});
