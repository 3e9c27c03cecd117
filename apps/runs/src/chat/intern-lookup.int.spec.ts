/**
 * InternLookup on real NATS and PostgreSQL, with a stand-in for lifecycle's `get-intern` (a lean handler judging
 * visibility as lifecycle does): a start's lookup is asked of lifecycle once per intern and TTL, each caller's
 * visibility is judged on the cached intern with lifecycle's rule, lifecycle's 404 is never cached, the
 * intern-changed notice drops the entry at once, and the halt count is read with the lookup.
 */
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import { DomainError, internVisibleTo, subjectsFor } from '@interns/contracts';
import type { GetInternRequest, InternStatus, InternView, Principal, RequestContext } from '@interns/contracts';
import { openDatabase } from '@interns/database';
import { observeNothing, serveLeanRequest } from '@interns/messaging';
import { createTestDatabase, type TestDatabase, testNatsPrefix } from '@interns/testing';
import { RUNS_MIGRATIONS, RUNS_SCHEMA } from '../migrations';
import { InternLookup } from './intern-lookup';
import { refusalReasonOf } from '../testing/refusal-reason';

const TTL_MS = 2_000;
const WORKSPACE = randomUUID();

function contextOf(principal: Partial<Principal>): RequestContext {
  return {
    correlationId: randomUUID(),
    principal: {
      kind: 'user',
      organizationId: randomUUID(),
      workspaceId: WORKSPACE,
      memberId: randomUUID(),
      keyId: randomUUID(),
      internId: null,
      scopes: ['interns'],
      chatappInstallRequired: false,
      ...principal,
    },
  };
}


describe('InternLookup', () => {
  const subjects = subjectsFor(testNatsPrefix());
  let db: TestDatabase;
  let dataSource: DataSource;
  let nc: NatsConnection;
  let lookup: InternLookup;
  let clock = 0;
  /** What the stand-in lifecycle holds, and how often it was asked. */
  const interns = new Map<string, InternView>();
  let asked = 0;

  const intern = (status: InternStatus = 'running'): InternView => {
    const view = { id: randomUUID(), workspace_id: WORKSPACE, status, model: 'local/scripted', instructions: 'be brief' } as InternView;
    interns.set(view.id, view);
    return view;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    dataSource = await openDatabase({ url: db.url, schema: RUNS_SCHEMA, migrations: RUNS_MIGRATIONS, applicationName: 'intern-lookup.int.spec', migrate: true });
    nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    const getIntern = {
      subject: subjects.lifecycle.getIntern,
      handle: async (request: GetInternRequest) => {
        asked++;
        const view = interns.get(request.internId);
        if (view === undefined || !internVisibleTo(view, request.context.principal)) throw new DomainError('not_found', 'intern not found');
        return view;
      },
    };
    nc.subscribe(subjects.lifecycle.getIntern, { callback: (_error, message) => void serveLeanRequest(getIntern as never, message, observeNothing) });
    await nc.flush();
    lookup = new InternLookup({ nc, subjects, dataSource, ttlMs: TTL_MS, now: () => clock });
    lookup.onModuleInit();
  });

  afterAll(async () => {
    lookup?.onApplicationShutdown();
    await nc?.close();
    await dataSource?.destroy();
    await db?.drop();
  });

  beforeEach(() => {
    asked = 0;
  });

  it('asks lifecycle once within the TTL, and judges every caller on the cached intern as lifecycle does', async () => {
    const view = intern();
    expect(await lookup.running(contextOf({}), view.id)).toEqual({ ...view, haltSeq: 0 });
    expect(await lookup.running(contextOf({}), view.id)).toMatchObject({ id: view.id, instructions: 'be brief' });
    expect(asked).toBe(1);
    // Another workspace, and an intern key of another intern: lifecycle's 404, without asking it.
    expect(await refusalReasonOf(lookup.running(contextOf({ workspaceId: randomUUID() }), view.id))).toBe('not_found');
    expect(await refusalReasonOf(lookup.running(contextOf({ kind: 'intern', memberId: null, internId: randomUUID() }), view.id))).toBe('not_found');
    expect(await lookup.running(contextOf({ kind: 'intern', memberId: null, internId: view.id }), view.id)).toMatchObject({ id: view.id });
    expect(asked).toBe(1);
    clock += TTL_MS;
    await lookup.running(contextOf({}), view.id);
    expect(asked).toBe(2);
  });

  it('never caches lifecycle\'s 404 (an absent intern, an id that is no uuid)', async () => {
    const absent = randomUUID();
    expect(await refusalReasonOf(lookup.running(contextOf({}), absent))).toBe('not_found');
    expect(await refusalReasonOf(lookup.running(contextOf({}), absent))).toBe('not_found');
    expect(await refusalReasonOf(lookup.running(contextOf({}), 'not-a-uuid'))).toBe('not_found');
    expect(asked).toBe(3);
  });

  it('drops the entry on lifecycle\'s intern-changed notice: the next start hears the intern is not running', async () => {
    const view = intern();
    await lookup.running(contextOf({}), view.id);
    interns.set(view.id, { ...view, status: 'stopped' });
    expect(await lookup.running(contextOf({}), view.id)).toMatchObject({ status: 'running' });
    nc.publish(subjects.internChanged, view.id);
    // The notice comes in on this same connection before the flush's answer: it has been handled.
    await nc.flush();
    expect(await refusalReasonOf(lookup.running(contextOf({}), view.id))).toBe('intern_not_running');
    expect(asked).toBe(2);
    // An intern that does not run is asked about every time: it may be running the next moment.
    expect(await refusalReasonOf(lookup.running(contextOf({}), view.id))).toBe('intern_not_running');
    expect(asked).toBe(3);
  });

  it('reads the intern\'s halt count with the lookup', async () => {
    const view = intern();
    await dataSource.query('SELECT runs.halt_intern($1)', [view.id]);
    await dataSource.query('SELECT runs.halt_intern($1)', [view.id]);
    expect(await lookup.running(contextOf({}), view.id)).toMatchObject({ haltSeq: 2 });
  });
});
