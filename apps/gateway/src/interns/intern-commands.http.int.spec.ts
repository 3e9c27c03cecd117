import 'reflect-metadata';
import { createHash } from 'node:crypto';
import { toPng } from 'jdenticon';
import { InternIconReply } from '@interns/contracts';
import type { RunningGateway } from '../gateway.bootstrap';
import { GatewayHarness, startGatewayHarness } from '../testing/gateway.harness';
import { call, HttpAnswer, HttpCall } from '@interns/testing';
import { bearer, KEYS } from '../testing/harness-identities.fixture';
import { LifecycleStandIn, StandInBehaviour } from '../testing/lifecycle.stand-in';

const INTERN_ID = '5e1f0c2a-7b7d-4c55-9a43-0d7c1e2f3a4b';
const ROUTE_DEADLINE_MS = 1000;
const TOO_BIG = Buffer.alloc(1048577, 'a');

const PNG = toPng('gateway-spec-icon', 64);
const PNG_SHA256 = createHash('sha256').update(PNG).digest('hex');
const ICON: InternIconReply = { sha256: PNG_SHA256, pngBase64: PNG.toString('base64') };

const refused = (status: number, reason: string, retryable = false) => ({
  error: { code: status, message: expect.any(String), metadata: { reason, retryable } },
});
const serviceError = (reason: string, message: string): StandInBehaviour => ({ err: { kind: 'service_error', reason, message } });

/** What lifecycle answers on each subject when it accepts (the success bodies of CONTRACT section 4). */
function accepting({ subject }: { subject: string }): StandInBehaviour {
  if (subject.endsWith('.delete-intern')) return { response: { deleting: true } };
  if (subject.endsWith('.provision-intern')) return { response: { provisioning: true } };
  if (subject.endsWith('.suspend-intern')) return { response: { suspended: true } };
  if (subject.endsWith('.intern-icon')) return { response: ICON };
  return { err: `unexpected subject ${subject}` };
}

describe('gateway: delete, provision, suspend and icon over real PostgreSQL and NATS', () => {
  let harness: GatewayHarness;
  let gateway: RunningGateway;
  let standIn: LifecycleStandIn;

  const request = (path: string, options: HttpCall = {}): Promise<HttpAnswer> => call(gateway.port, path, options);
  const asUser = (options: HttpCall = {}): HttpCall => ({ ...options, headers: { ...bearer(KEYS.user), ...options.headers } });
  const withBody = (method: string, body: string | Buffer, contentType?: string): HttpCall =>
    asUser({ method, body, headers: contentType === undefined ? {} : { 'content-type': contentType } });
  /** Runs `send` and reports whether it reached lifecycle. */
  const reachesLifecycle = async (send: () => Promise<HttpAnswer>): Promise<[HttpAnswer, boolean]> => {
    const before = standIn.received.length;
    const answer = await send();
    return [answer, standIn.received.length > before];
  };

  beforeAll(async () => {
    harness = await startGatewayHarness({ name: 'gateway-commands-spec', routeDeadlineMs: ROUTE_DEADLINE_MS });
    ({ gateway, standIn } = harness);
  });

  beforeEach(() => standIn.answer(accepting));

  afterAll(async () => {
    await harness?.stop();
  });

  describe('DELETE /interns/{intern_id}', () => {
    const path = `/api/v1/interns/${INTERN_ID}`;

    it('answers 202 {"deleting":true} for an empty body, sending an empty delete body to lifecycle', async () => {
      const answer = await request(path, asUser({ method: 'DELETE' }));
      expect(answer.status).toBe(202);
      expect(answer.json).toStrictEqual({ deleting: true });
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      const received = standIn.last();
      expect(received.subject).toMatch(/\.lifecycle\.cmd\.delete-intern$/);
      expect(received.correlationHeader).toBe(answer.headers['x-correlation-id']);
      expect(received.packet.data).toEqual({
        context: { correlationId: answer.headers['x-correlation-id'], principal: expect.objectContaining({ kind: 'user' }) },
        internId: INTERN_ID,
        body: {},
      });
    });

    it('takes an empty body whatever its content type (the media type matters only for a body)', async () => {
      const answer = await request(path, withBody('DELETE', '', 'text/plain'));
      expect(answer.status).toBe(202);
      expect(standIn.last().packet.data).toMatchObject({ body: {} });
    });

    it.each([
      ['application/json', true],
      ['application/json; charset=utf-8', false],
    ])('passes the acknowledgement on (%s)', async (contentType, acknowledge) => {
      const answer = await request(path, withBody('DELETE', JSON.stringify({ acknowledge_workspace_loss: acknowledge }), contentType));
      expect(answer.status).toBe(202);
      expect(answer.json).toStrictEqual({ deleting: true });
      expect(standIn.last().packet.data).toMatchObject({ internId: INTERN_ID, body: { acknowledge_workspace_loss: acknowledge } });
    });

    it('accepts {} as no acknowledgement', async () => {
      const answer = await request(path, withBody('DELETE', '{}', 'application/json'));
      expect(answer.status).toBe(202);
      expect(standIn.last().packet.data).toMatchObject({ body: {} });
    });

    it('answers 413 for a body over 1048576 bytes, whatever its content type, without asking lifecycle', async () => {
      for (const contentType of ['application/json', 'text/plain', undefined]) {
        const [answer, reached] = await reachesLifecycle(() => request(path, withBody('DELETE', TOO_BIG, contentType)));
        expect([contentType, answer.status, answer.json, reached]).toEqual([contentType, 413, refused(413, 'payload_too_large'), false]);
      }
    });

    it('answers 415 for a non-empty body without application/json, before looking at the JSON', async () => {
      for (const contentType of ['text/plain', 'application/x-www-form-urlencoded', undefined]) {
        const [answer, reached] = await reachesLifecycle(() => request(path, withBody('DELETE', '{not json', contentType)));
        expect([contentType, answer.status, answer.json, reached]).toEqual([contentType, 415, refused(415, 'unsupported_media_type'), false]);
      }
    });

    it.each([
      ['malformed JSON', '{"acknowledge_workspace_loss":'],
      ['an unknown field', JSON.stringify({ acknowledge_workspace_loss: true, force: true })],
      ['a mistyped field', JSON.stringify({ acknowledge_workspace_loss: 'yes' })],
      ['a JSON array', '[]'],
      ['JSON null', 'null'],
    ])('answers 400 invalid_body for %s', async (_case, body) => {
      const [answer, reached] = await reachesLifecycle(() => request(path, withBody('DELETE', body, 'application/json')));
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual(refused(400, 'invalid_body'));
      expect(reached).toBe(false);
    });

    it('applies the body rules before the intern id, then answers 404 for an id that is not a uuid', async () => {
      const badBody = await request('/api/v1/interns/nope', withBody('DELETE', '[]', 'application/json'));
      expect(badBody.json).toEqual(refused(400, 'invalid_body'));
      const [goodBody, reached] = await reachesLifecycle(() => request('/api/v1/interns/nope', asUser({ method: 'DELETE' })));
      expect(goodBody.json).toEqual(refused(404, 'not_found'));
      expect(reached).toBe(false);
    });

    it.each([
      ['workspace_loss_not_acknowledged', 409, 'the workspace archive failed; acknowledge the loss to delete'],
      ['intern_busy', 409, 'intern is busy'],
      ['not_found', 404, 'intern not found'],
    ])('maps lifecycle refusing with %s to %i', async (reason, status, message) => {
      standIn.answer(() => serviceError(reason, message));
      const answer = await request(path, asUser({ method: 'DELETE' }));
      expect(answer.status).toBe(status);
      expect(answer.json).toStrictEqual({ error: { code: status, message, metadata: { reason, retryable: false } } });
      expect(answer.headers['retry-after']).toBeUndefined();
    });
  });

  describe.each([
    ['provision', 202, { provisioning: true }, 'provision-intern'],
    ['suspend', 200, { suspended: true }, 'suspend-intern'],
  ])('POST /interns/{intern_id}/%s', (command, status, success, subject) => {
    const path = `/api/v1/interns/${INTERN_ID}/${command}`;

    it(`answers ${status} ${JSON.stringify(success)} for an empty body, sending the intern id to lifecycle`, async () => {
      const answer = await request(path, asUser({ method: 'POST' }));
      expect(answer.status).toBe(status);
      expect(answer.json).toStrictEqual(success);
      const received = standIn.last();
      expect(received.subject.endsWith(`.lifecycle.cmd.${subject}`)).toBe(true);
      expect(received.packet.data).toEqual({
        context: { correlationId: answer.headers['x-correlation-id'], principal: expect.objectContaining({ kind: 'user' }) },
        internId: INTERN_ID,
      });
    });

    it.each([
      ['{} as text/plain', '{}', 'text/plain'],
      ['{} with no content type', '{}', undefined],
      ['{} as application/json', '{}', 'application/json'],
      ['{} with whitespace, as a made-up media type', ' { } \n', 'garbage'],
      ['an empty body as text/plain', '', 'text/plain'],
    ])('accepts %s', async (_case, body, contentType) => {
      const answer = await request(path, withBody('POST', body, contentType));
      expect(answer.status).toBe(status);
      expect(answer.json).toStrictEqual(success);
    });

    it.each([
      ['{"x":1} as application/json', '{"x":1}', 'application/json'],
      ['{"x":1} as text/plain', '{"x":1}', 'text/plain'],
      ['[] as application/json', '[]', 'application/json'],
      ['[] with no content type', '[]', undefined],
      ['malformed JSON', '{', 'application/json'],
      ['a JSON string', '"provision"', 'text/plain'],
    ])('answers 400 invalid_body, never 415, for %s', async (_case, body, contentType) => {
      const [answer, reached] = await reachesLifecycle(() => request(path, withBody('POST', body, contentType)));
      expect(answer.status).toBe(400);
      expect(answer.json).toEqual(refused(400, 'invalid_body'));
      expect(reached).toBe(false);
    });

    it('answers 413 for a body over 1048576 bytes', async () => {
      const answer = await request(path, withBody('POST', TOO_BIG, 'text/plain'));
      expect(answer.status).toBe(413);
      expect(answer.json).toEqual(refused(413, 'payload_too_large'));
    });

    it('applies the body rules before the intern id, then answers 404 for an id that is not a uuid', async () => {
      const badBody = await request(`/api/v1/interns/nope/${command}`, withBody('POST', '{"x":1}', 'application/json'));
      expect(badBody.json).toEqual(refused(400, 'invalid_body'));
      const [goodBody, reached] = await reachesLifecycle(() => request(`/api/v1/interns/nope/${command}`, withBody('POST', '{}', 'text/plain')));
      expect(goodBody.json).toEqual(refused(404, 'not_found'));
      expect(reached).toBe(false);
    });

    it.each([
      ['intern_busy', 409],
      ['not_found', 404],
    ])('maps lifecycle refusing with %s to %i', async (reason, refusedStatus) => {
      standIn.answer(() => serviceError(reason, `refused: ${reason}`));
      const answer = await request(path, asUser({ method: 'POST' }));
      expect(answer.status).toBe(refusedStatus);
      expect(answer.json).toStrictEqual({ error: { code: refusedStatus, message: `refused: ${reason}`, metadata: { reason, retryable: false } } });
    });
  });

  describe('GET /interns/{intern_id}/icon', () => {
    const path = `/api/v1/interns/${INTERN_ID}/icon`;

    it('answers the PNG bytes, whose SHA-256 is the quoted ETag, revalidated on every use without ?v', async () => {
      const answer = await request(path, asUser());
      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toBe('image/png');
      expect(answer.bytes.equals(PNG)).toBe(true);
      expect(answer.headers['content-length']).toBe(String(PNG.length));
      expect(createHash('sha256').update(answer.bytes).digest('hex')).toBe(PNG_SHA256);
      expect(answer.headers.etag).toBe(`"${PNG_SHA256}"`);
      expect(answer.headers['cache-control']).toBe('private, no-cache');
      expect(standIn.last()).toMatchObject({
        subject: expect.stringMatching(/\.lifecycle\.qry\.intern-icon$/),
        packet: { data: { internId: INTERN_ID } },
      });
    });

    it('lets a client cache it for a year when ?v names its SHA-256', async () => {
      const answer = await request(`${path}?v=${PNG_SHA256}`, asUser());
      expect(answer.status).toBe(200);
      expect(answer.bytes.equals(PNG)).toBe(true);
      expect(answer.headers['cache-control']).toBe('private, max-age=31536000, immutable');
    });

    it('does not promise immutability for a ?v that names another icon', async () => {
      for (const query of ['v=0000', `v=${PNG_SHA256}&v=${PNG_SHA256}`, `V=${PNG_SHA256}`]) {
        const answer = await request(`${path}?${query}`, asUser());
        expect([query, answer.status, answer.headers['cache-control']]).toEqual([query, 200, 'private, no-cache']);
      }
    });

    it.each([
      ['its ETag', `"${PNG_SHA256}"`],
      ['its weak ETag', `W/"${PNG_SHA256}"`],
      ['a list holding its ETag', `"other", "${PNG_SHA256}"`],
      ['*', '*'],
    ])('answers 304 with no body when If-None-Match names %s', async (_case, ifNoneMatch) => {
      const answer = await request(`${path}?v=${PNG_SHA256}`, asUser({ headers: { 'if-none-match': ifNoneMatch } }));
      expect(answer.status).toBe(304);
      expect(answer.bytes.length).toBe(0);
      expect(answer.headers.etag).toBe(`"${PNG_SHA256}"`);
      expect(answer.headers['cache-control']).toBe('private, max-age=31536000, immutable');
      expect(answer.headers['content-type']).toBeUndefined();
    });

    it('answers 200 with the bytes when If-None-Match names another icon', async () => {
      const answer = await request(path, asUser({ headers: { 'if-none-match': '"0000"' } }));
      expect(answer.status).toBe(200);
      expect(answer.bytes.equals(PNG)).toBe(true);
    });

    it('is a read: served to an organization whose lifecycle writes are disabled', async () => {
      const answer = await request(path, { headers: bearer(KEYS.readOnly) });
      expect(answer.status).toBe(200);
    });

    it('answers 404 for an id that is not a uuid without asking lifecycle, and 404 when lifecycle says not found', async () => {
      const [notUuid, reached] = await reachesLifecycle(() => request('/api/v1/interns/nope/icon', asUser()));
      expect(notUuid.json).toEqual(refused(404, 'not_found'));
      expect(reached).toBe(false);

      standIn.answer(() => serviceError('not_found', 'intern not found'));
      const answer = await request(path, asUser({ headers: { 'if-none-match': `"${PNG_SHA256}"` } }));
      expect(answer.status).toBe(404);
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(answer.headers.etag).toBeUndefined();
      expect(answer.json).toStrictEqual({ error: { code: 404, message: 'intern not found', metadata: { reason: 'not_found', retryable: false } } });
    });
  });

  describe('the route deadline', () => {
    it.each([
      ['DELETE', `/api/v1/interns/${INTERN_ID}`],
      ['POST', `/api/v1/interns/${INTERN_ID}/provision`],
      ['POST', `/api/v1/interns/${INTERN_ID}/suspend`],
      ['GET', `/api/v1/interns/${INTERN_ID}/icon`],
    ])('answers %s %s with 408 quoting the lifecycle route deadline when lifecycle is silent', async (method, path) => {
      standIn.answer(() => 'silent');
      const started = Date.now();
      const answer = await request(path, asUser({ method }));
      expect(answer.status).toBe(408);
      expect(answer.json).toStrictEqual({ error: { code: 408, message: 'route deadline of 1s exceeded', metadata: { reason: 'timeout', retryable: true } } });
      expect(Date.now() - started).toBeGreaterThanOrEqual(ROUTE_DEADLINE_MS - 50);
    });
  });
});
