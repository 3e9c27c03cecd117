import 'reflect-metadata';
import { InternView, UNAUTHENTICATED_MESSAGE } from '@interns/contracts';
import { LocalOidcIssuer } from '@interns/identity';
import type { RunningGateway } from '../gateway.bootstrap';
import { GatewayHarness, startGatewayHarness } from '../testing/gateway.harness';
import { call, HttpAnswer, HttpCall } from '@interns/testing';
import { bearer, KEYS, MEMBERS, ORGANIZATIONS, WORKSPACE_MAIN } from '../testing/harness-identities.fixture';
import { LifecycleStandIn } from '../testing/lifecycle.stand-in';

const INTERN_ID = '5e1f0c2a-7b7d-4c55-9a43-0d7c1e2f3a4b';
const ROUTE_DEADLINE_MS = 1000;

const intern: InternView = {
  id: INTERN_ID,
  name: 'ada-helper',
  description: null,
  instructions: null,
  model: null,
  status: 'stopped',
  last_failure_message: null,
  progress: null,
  hostname: null,
  workspace_id: WORKSPACE_MAIN,
  vault_id: '6f2a1d3b-8c8e-4d66-8b54-1e8d2f3a4b5c',
  attached_vault_id: null,
  created_at: '2025-01-01T00:00:00.000Z',
  updated_at: '2025-01-01T00:00:00.000Z',
};

const refused = (status: number, reason: string, retryable = false) => ({
  error: { code: status, message: expect.any(String), metadata: { reason, retryable } },
});

describe('gateway: /api/v1/interns over real PostgreSQL and NATS', () => {
  let harness: GatewayHarness;
  let gateway: RunningGateway;
  let standIn: LifecycleStandIn;
  let tokens: { withScope: string; withoutScope: string; inactiveMember: string };

  const request = (path: string, options: HttpCall = {}): Promise<HttpAnswer> => call(gateway.port, path, options);
  const json = (body: unknown, headers: Record<string, string> = {}): HttpCall => ({
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
  const asUser = (options: HttpCall = {}): HttpCall => ({ ...options, headers: { ...bearer(KEYS.user), ...options.headers } });

  beforeAll(async () => {
    harness = await startGatewayHarness({ name: 'gateway-spec', routeDeadlineMs: ROUTE_DEADLINE_MS });
    ({ gateway, standIn } = harness);

    const issuer = await LocalOidcIssuer.open({ keysDir: gateway.deps.config.keysDir });
    const claims = { org: ORGANIZATIONS.main, workspace_id: WORKSPACE_MAIN, ttlSeconds: 600 };
    tokens = {
      withScope: await issuer.sign({ ...claims, sub: MEMBERS.active, scope: 'interns vault:read' }),
      withoutScope: await issuer.sign({ ...claims, sub: MEMBERS.active, scope: 'vault:read' }),
      inactiveMember: await issuer.sign({ ...claims, sub: MEMBERS.inactive, scope: 'interns' }),
    };
  });

  beforeEach(() => {
    standIn.answer(({ subject }) => {
      if (subject.endsWith('list-interns')) return { response: { data: [intern], has_more: false } };
      if (subject.endsWith('create-intern')) return { response: { replayed: false, intern } };
      return { response: intern };
    });
  });

  afterAll(async () => {
    await harness?.stop();
  });

  describe('check 1: regional host', () => {
    it.each(['eu.localhost', 'eu.localhost:8080', 'us-west-1.LOCALHOST'])('refuses %s with 403 forbidden, before authentication', async (host) => {
      const answer = await request('/api/v1/interns', { headers: { host } });
      expect(answer.status).toBe(403);
      expect(answer.json).toEqual(refused(403, 'forbidden'));
    });

    it('serves hosts that are not regional (a one-letter label is no region)', async () => {
      expect((await request('/api/v1/interns', asUser({ headers: { host: 'e.localhost' } }))).status).toBe(200);
      expect((await request('/api/v1/interns', asUser({ headers: { host: 'localhost:1234' } }))).status).toBe(200);
    });
  });

  describe('check 2: credential', () => {
    const unauthenticated = { error: { code: 401, message: UNAUTHENTICATED_MESSAGE } };

    it.each([
      ['no Authorization header', {}],
      ['an unknown key', bearer('no-such-key')],
      ['a disabled key', bearer(KEYS.disabled)],
      ['a management key', bearer(KEYS.management)],
      ['a malformed header', { authorization: `Basic ${KEYS.user}` }],
      ['a forged token', bearer('eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJhZGEifQ.c2lnbmF0dXJl')],
    ])('answers 401 without metadata for %s', async (_case, headers) => {
      const answer = await request('/api/v1/interns', { headers });
      expect(answer.status).toBe(401);
      expect(answer.json).toStrictEqual(unauthenticated);
    });

    it('answers 401 on every path under /interns, unknown sub-routes included', async () => {
      for (const [method, path] of [
        ['GET', `/api/v1/interns/${INTERN_ID}`],
        ['DELETE', `/api/v1/interns/${INTERN_ID}`],
        ['POST', `/api/v1/interns/${INTERN_ID}/chat/completions`],
      ] as const) {
        const answer = await request(path, { method });
        expect([method, path, answer.status, answer.json]).toEqual([method, path, 401, unauthenticated]);
      }
    });

    it('answers 401 before reading a body that is too large', async () => {
      const answer = await request('/api/v1/interns', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: Buffer.alloc(1048577, 'a'),
      });
      expect(answer.status).toBe(401);
    });
  });

  describe('check 3: access', () => {
    it('answers 403 forbidden when the key owner lost access', async () => {
      const answer = await request('/api/v1/interns', { headers: bearer(KEYS.userInactive) });
      expect(answer.status).toBe(403);
      expect(answer.json).toEqual(refused(403, 'forbidden'));
    });

    it('answers 403 forbidden for a token of an inactive member', async () => {
      const answer = await request('/api/v1/interns', { headers: bearer(tokens.inactiveMember) });
      expect(answer.json).toEqual(refused(403, 'forbidden'));
    });

    it('answers 403 insufficient_scope for a token without the interns scope', async () => {
      const answer = await request(`/api/v1/interns/${INTERN_ID}`, { headers: bearer(tokens.withoutScope) });
      expect(answer.status).toBe(403);
      expect(answer.json).toEqual(refused(403, 'insufficient_scope'));
    });

    it('lets a token with the interns scope through, as its member', async () => {
      const answer = await request('/api/v1/interns', { headers: bearer(tokens.withScope) });
      expect(answer.status).toBe(200);
      expect(standIn.last().packet.data).toMatchObject({
        context: { principal: { kind: 'oauth', memberId: MEMBERS.active, keyId: null, workspaceId: WORKSPACE_MAIN } },
      });
    });
  });

  describe('checks 4 and 5: programme and lifecycle writes', () => {
    it('answers 404 on every path for an organization outside the programme', async () => {
      const headers = bearer(KEYS.outsideProgramme);
      const attempts: (HttpCall & { path: string })[] = [
        { method: 'GET', path: '/api/v1/interns' },
        { method: 'GET', path: `/api/v1/interns/${INTERN_ID}` },
        { method: 'POST', path: '/api/v1/interns', ...json({ name: 'ok-name' }) },
      ];
      for (const options of attempts) {
        const answer = await request(options.path, { ...options, headers: { ...headers, ...options.headers } });
        expect(answer.status).toBe(404);
        expect(answer.json).toEqual(refused(404, 'not_found'));
      }
    });

    it('answers 404 on writes when lifecycle writes are disabled, while reads work', async () => {
      const headers = bearer(KEYS.readOnly);
      expect((await request('/api/v1/interns', { headers })).status).toBe(200);
      expect((await request(`/api/v1/interns/${INTERN_ID}`, { headers })).status).toBe(200);
      for (const [method, path] of [
        ['POST', '/api/v1/interns'],
        ['PATCH', `/api/v1/interns/${INTERN_ID}`],
        ['DELETE', `/api/v1/interns/${INTERN_ID}`],
        ['POST', `/api/v1/interns/${INTERN_ID}/provision`],
        ['POST', `/api/v1/interns/${INTERN_ID}/suspend`],
      ] as const) {
        // An invalid body too: check 5 comes before the body rules.
        const answer = await request(path, { method, headers: { ...headers, 'content-type': 'text/plain' }, body: 'x' });
        expect([method, path, answer.status, answer.json]).toEqual([method, path, 404, refused(404, 'not_found')]);
      }
    });
  });

  describe('check 6: body rules', () => {
    const big = Buffer.alloc(1048577, 'a');

    it('answers 413 for a body over 1048576 bytes, whatever its content type', async () => {
      for (const contentType of ['application/json', 'text/plain', 'garbage']) {
        const answer = await request('/api/v1/interns', asUser({ method: 'POST', headers: { 'content-type': contentType }, body: big }));
        expect([contentType, answer.status, answer.json]).toEqual([contentType, 413, refused(413, 'payload_too_large')]);
      }
    });

    it('answers 413 for a chunked body over the limit', async () => {
      const answer = await request('/api/v1/interns', asUser({ method: 'POST', headers: { 'content-type': 'application/json' }, body: big, chunked: true }));
      expect(answer.status).toBe(413);
      expect(answer.json).toEqual(refused(413, 'payload_too_large'));
    });

    it('accepts a body of exactly 1048576 bytes as far as size goes (then judges it as JSON)', async () => {
      const answer = await request('/api/v1/interns', asUser({ method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.alloc(1048576, ' ') }));
      expect(answer.status).toBe(400);
    });

    it('answers 415 for a non-empty body without application/json, before looking at the JSON', async () => {
      for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', 'garbage', undefined]) {
        const headers: Record<string, string> = contentType === undefined ? {} : { 'content-type': contentType };
        const answer = await request('/api/v1/interns', asUser({ method: 'POST', headers, body: '{not json' }));
        expect([contentType, answer.status, answer.json]).toEqual([contentType, 415, refused(415, 'unsupported_media_type')]);
      }
      const patch = await request(`/api/v1/interns/${INTERN_ID}`, asUser({ method: 'PATCH', headers: { 'content-type': 'text/plain' }, body: '{}' }));
      expect(patch.json).toEqual(refused(415, 'unsupported_media_type'));
    });

    it('accepts application/json with a charset parameter', async () => {
      const answer = await request('/api/v1/interns', asUser({
        method: 'POST',
        headers: { 'content-type': 'Application/JSON; charset=utf-8' },
        body: JSON.stringify({ name: 'ada-helper' }),
      }));
      expect(answer.status).toBe(201);
    });

    it.each([
      ['malformed JSON', '{"name":'],
      ['a JSON array', '[]'],
      ['a JSON string', '"ada"'],
      ['an empty body', ''],
      ['an unknown field', JSON.stringify({ name: 'ada-helper', colour: 'red' })],
      ['a broken field rule', JSON.stringify({ name: 'Ada' })],
      ['a mistyped field', JSON.stringify({ name: 'ada-helper', provision: 'yes' })],
    ])('answers 400 invalid_body for %s', async (_case, body) => {
      const answer = await request('/api/v1/interns', asUser({ method: 'POST', headers: { 'content-type': 'application/json' }, body }));
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual(refused(400, 'invalid_body'));
    });

    it('names the unknown field', async () => {
      const answer = await request('/api/v1/interns', asUser(json({ name: 'ada-helper', colour: 'red' })));
      expect(answer.json).toEqual({ error: { code: 400, message: 'unknown field: colour', metadata: { reason: 'invalid_body', retryable: false } } });
    });

    it('answers 400 for an Idempotency-Key over 255 characters', async () => {
      const answer = await request('/api/v1/interns', asUser(json({ name: 'ada-helper' }, { 'idempotency-key': 'k'.repeat(256) })));
      expect(answer.json).toEqual(refused(400, 'invalid_body'));
    });

    it.each([
      ['nine status items', `status=${Array(9).fill('running').join(',')}`],
      ['an unknown status', 'status=sleeping'],
      ['limit 0', 'limit=0'],
      ['limit 501', 'limit=501'],
      ['a non-integer limit', 'limit=ten'],
      ['a repeated limit', 'limit=1&limit=2'],
      ['an empty cursor', 'starting_after='],
      ['a workspace_id that is no uuid', 'workspace_id=main'],
    ])('answers 400 on the list for %s', async (_case, query) => {
      const answer = await request(`/api/v1/interns?${query}`, asUser());
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual(refused(400, 'invalid_body'));
    });

    it('takes a percent-encoded comma in the status filter, collapses repeats and ignores unknown parameters', async () => {
      const answer = await request('/api/v1/interns?status=running%2Cstopped%2Crunning&limit=10&colour=red', asUser());
      expect(answer.status).toBe(200);
      expect(standIn.last().packet.data).toMatchObject({ limit: 10, statuses: ['running', 'stopped'], startingAfter: null, workspaceId: null });
    });
  });

  describe('check 7: intern ids', () => {
    it('answers 404 for an intern id that is not a uuid', async () => {
      for (const id of ['nope', 'x'.repeat(300)]) {
        const answer = await request(`/api/v1/interns/${id}`, asUser());
        expect(answer.status).toBe(404);
        expect(answer.json).toEqual(refused(404, 'not_found'));
      }
    });

    it('applies the body rules before the id', async () => {
      const badBody = await request('/api/v1/interns/nope', asUser(json({ colour: 'red' })));
      expect(badBody.status).toBe(404); // POST /interns/{id} is no route
      const patchBadBody = await request('/api/v1/interns/nope', asUser({ ...json({ colour: 'red' }), method: 'PATCH' }));
      expect(patchBadBody.json).toEqual(refused(400, 'invalid_body'));
      const patchGoodBody = await request('/api/v1/interns/nope', asUser({ ...json({ name: 'new-name' }), method: 'PATCH' }));
      expect(patchGoodBody.json).toEqual(refused(404, 'not_found'));
    });
  });

  describe('forwarding to lifecycle', () => {
    it('lists, with the principal and the correlation id in the payload and the NATS header', async () => {
      const answer = await request('/api/v1/interns', asUser());
      expect(answer.status).toBe(200);
      expect(answer.json).toEqual({ data: [intern], has_more: false });
      const correlationId = answer.headers['x-correlation-id'];
      expect(correlationId).toMatch(/^[0-9a-f-]{36}$/);
      const received = standIn.last();
      expect(received.correlationHeader).toBe(correlationId);
      expect(received.packet.data).toEqual({
        context: {
          correlationId,
          principal: {
            kind: 'user',
            organizationId: ORGANIZATIONS.main,
            workspaceId: WORKSPACE_MAIN,
            memberId: MEMBERS.active,
            keyId: expect.any(String),
            internId: null,
            scopes: [],
            chatappInstallRequired: false,
          },
        },
        limit: 50,
        statuses: null,
        startingAfter: null,
        workspaceId: null,
      });
    });

    it('mints a new correlation id per request', async () => {
      const first = await request('/api/v1/interns', asUser());
      const second = await request('/api/v1/interns', asUser());
      expect(first.headers['x-correlation-id']).not.toBe(second.headers['x-correlation-id']);
    });

    it('creates with 201, or 200 when the reply says replayed, passing the Idempotency-Key', async () => {
      const created = await request('/api/v1/interns', asUser(json({ name: 'ada-helper', provision: true }, { 'idempotency-key': 'k-1' })));
      expect(created.status).toBe(201);
      expect(created.json).toEqual(intern);
      expect(standIn.last().packet.data).toMatchObject({ body: { name: 'ada-helper', provision: true }, idempotencyKey: 'k-1' });

      standIn.answer(() => ({ response: { replayed: true, intern } }));
      const replayed = await request('/api/v1/interns', asUser(json({ name: 'ada-helper', provision: true }, { 'idempotency-key': 'k-1' })));
      expect(replayed.status).toBe(200);
      expect(replayed.json).toEqual(intern);
    });

    it('creates for an organization key, which acts for no member', async () => {
      const answer = await request('/api/v1/interns', json({ name: 'org-helper' }, bearer(KEYS.organization)));
      expect(answer.status).toBe(201);
      expect(standIn.last().packet.data).toMatchObject({ idempotencyKey: null, context: { principal: { kind: 'organization', memberId: null } } });
    });

    it('gets and updates one intern by id', async () => {
      const got = await request(`/api/v1/interns/${INTERN_ID.toUpperCase()}`, asUser());
      expect(got.status).toBe(200);
      expect(standIn.last().packet.data).toMatchObject({ internId: INTERN_ID });

      const updated = await request(`/api/v1/interns/${INTERN_ID}`, asUser({ ...json({ description: null }), method: 'PATCH' }));
      expect(updated.status).toBe(200);
      expect(standIn.last()).toMatchObject({ subject: expect.stringMatching(/\.lifecycle\.cmd\.update-intern$/), packet: { data: { internId: INTERN_ID, body: { description: null } } } });
    });

    it('maps a service refusal to its status and reason (409 name_taken, not retryable)', async () => {
      standIn.answer(() => ({ err: { kind: 'service_error', reason: 'name_taken', message: 'name "ada-helper" is taken' } }));
      const answer = await request('/api/v1/interns', asUser(json({ name: 'ada-helper' })));
      expect(answer.status).toBe(409);
      expect(answer.json).toEqual({ error: { code: 409, message: 'name "ada-helper" is taken', metadata: { reason: 'name_taken', retryable: false } } });
      expect(answer.headers['retry-after']).toBeUndefined();
    });

    it('maps visibility refusals of lifecycle to 404', async () => {
      standIn.answer(() => ({ err: { kind: 'service_error', reason: 'not_found', message: 'intern not found' } }));
      const answer = await request(`/api/v1/interns/${INTERN_ID}`, asUser());
      expect(answer.json).toEqual({ error: { code: 404, message: 'intern not found', metadata: { reason: 'not_found', retryable: false } } });
    });

    it('answers 500 internal_error, retryable, for a failure without a contract reason', async () => {
      standIn.answer(() => ({ err: { message: 'boom', status: 'error' } }));
      const answer = await request('/api/v1/interns', asUser());
      expect(answer.status).toBe(500);
      expect(answer.json).toEqual(refused(500, 'internal_error', true));
      expect(answer.headers['retry-after']).toBe('1');
    });

    it('answers 408 quoting the route deadline when lifecycle does not answer in time', async () => {
      standIn.answer(() => 'silent');
      const started = Date.now();
      const answer = await request('/api/v1/interns', asUser());
      const elapsed = Date.now() - started;
      expect(answer.status).toBe(408);
      expect(answer.json).toEqual({ error: { code: 408, message: 'route deadline of 1s exceeded', metadata: { reason: 'timeout', retryable: true } } });
      expect(elapsed).toBeGreaterThanOrEqual(ROUTE_DEADLINE_MS - 50);
      expect(elapsed).toBeLessThan(ROUTE_DEADLINE_MS + 1000);
    });

    it('answers 500 internal_error with Retry-After at once when no lifecycle instance answers', async () => {
      await standIn.stop();
      try {
        const started = Date.now();
        const answer = await request(`/api/v1/interns/${INTERN_ID}`, asUser());
        expect(Date.now() - started).toBeLessThan(ROUTE_DEADLINE_MS / 2);
        expect(answer.status).toBe(500);
        expect(answer.json).toEqual(refused(500, 'internal_error', true));
        expect(answer.headers['retry-after']).toBe('1');
      } finally {
        await standIn.start();
      }
    });
  });

  describe('one error shape', () => {
    it('answers unknown routes under /api/v1 with the 404 envelope', async () => {
      for (const path of ['/api/v1/nothing-here', '/api/v1', '/api/v1/interns/', '/api/v1/interns/a/b/c/d']) {
        const answer = await request(path, asUser());
        expect([path, answer.status, answer.json]).toEqual([path, 404, refused(404, 'not_found')]);
      }
    });

    it('answers an unsupported method on a served path with 404 not_found, not a Nest body', async () => {
      for (const [method, path] of [['PUT', '/api/v1/interns'], ['DELETE', '/api/v1/interns'], ['POST', `/api/v1/interns/${INTERN_ID}`]] as const) {
        const answer = await request(path, asUser({ method }));
        expect([method, path, answer.status, answer.json]).toEqual([method, path, 404, refused(404, 'not_found')]);
      }
    });

    it('runs the checks on targets the router decodes or resolves (no way around authentication)', async () => {
      for (const path of ['/api/v1/%69nterns', `/api/v1/interns/${INTERN_ID}%2F`, 'http://localhost/api/v1/interns']) {
        const answer = await request(path);
        expect([path, answer.status]).toEqual([path, 401]);
      }
    });

    it('answers a malformed target with an envelope', async () => {
      const answer = await request('/api/v1/interns/%zz', asUser());
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual(refused(400, 'invalid_body'));
      expect(answer.headers['x-correlation-id']).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('sends a correlation id with errors too', async () => {
      const answer = await request('/api/v1/interns');
      expect(answer.headers['x-correlation-id']).toMatch(/^[0-9a-f-]{36}$/);
    });
  });

  describe('operations', () => {
    it('serves health and metrics outside /api/v1, without a credential', async () => {
      expect((await request('/health/live')).status).toBe(200);
      const ready = await request('/health/ready');
      expect(ready.status).toBe(200);
      const metrics = await request('/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.text).toContain('interns_service_info{service="gateway"} 1');
    });
  });
});
