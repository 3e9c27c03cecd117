/**
 * Who sees an event: the audience resolver learns interns' workspaces from lifecycle's events and sessions' callers
 * from `run.started`, asks for a workspace only when no event told it, and shows nothing it cannot place; the
 * visibility rules are those of the intern and run routes (libs/contracts visibility).
 */
import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { Principal, ReceivedIntegrationEvent } from '@interns/contracts';
import { audienceIncludes, AudienceResolver } from './event-audience';

// The lookup that fails is logged: not this test's output.
beforeAll(() => Logger.overrideLogger(false));

const WS = '11111111-1111-4111-8111-111111111111';
const OTHER_WS = '22222222-2222-4222-8222-222222222222';
const INTERN = '0b0e6a52-7d7c-4a8e-9d43-3d7c2f1e9a10';
const OTHER_INTERN = '5d9c2f62-1f0b-4b43-a8c5-0f0f0f0f0f0f';

const principal = (kind: Principal['kind'], overrides: Partial<Principal> = {}): Principal => ({
  kind,
  organizationId: 'acme',
  workspaceId: WS,
  memberId: kind === 'user' || kind === 'oauth' ? 'alice' : null,
  keyId: kind === 'oauth' ? null : 'k-1',
  internId: kind === 'intern' ? INTERN : null,
  scopes: [],
  chatappInstallRequired: false,
  ...overrides,
});

function event(type: string, data: Record<string, unknown>, workspaceId: string | null = null): ReceivedIntegrationEvent {
  return { id: randomUUID(), type, version: 1, created_at: '2030-01-01T00:00:00.000Z', workspace_id: workspaceId, sequence: 1, correlation_id: null, data };
}

const run = (internId: string, sessionId: string) => ({ intern_id: internId, run_id: randomUUID(), session_id: sessionId });

function resolver(workspaces: Record<string, string> = {}) {
  const asked: string[] = [];
  const resolve = new AudienceResolver({
    lookUpWorkspace: async (internId) => {
      asked.push(internId);
      if (internId === 'broken') throw new Error('no answer');
      return workspaces[internId] ?? null;
    },
    sessionMemoryMs: 60_000,
    maxEntries: 100,
  });
  return { resolve, asked };
}

it("places a lifecycle event by its own workspace, and a run's event by what lifecycle's events told of its intern", async () => {
  const { resolve, asked } = resolver();
  expect(await resolve.resolve(event('intern.created', { intern_id: INTERN }, WS))).toEqual({ workspaceId: WS, internId: INTERN, run: null });
  const session = randomUUID();
  expect(await resolve.resolve(event('run.started', { ...run(INTERN, session), user_id: 'alice', api_key_id: null }))).toEqual({
    workspaceId: WS,
    internId: INTERN,
    run: { caller: 'member:alice' },
  });
  // Every run of the session has its caller.
  expect((await resolve.resolve(event('run.completed', run(INTERN, session))))?.run).toEqual({ caller: 'member:alice' });
  expect(asked).toEqual([]);
});

it('asks for the workspace of an intern no event placed, once; places nothing it cannot find', async () => {
  const { resolve, asked } = resolver({ [OTHER_INTERN]: OTHER_WS });
  const session = randomUUID();
  expect((await resolve.resolve(event('run.started', { ...run(OTHER_INTERN, session), user_id: null, api_key_id: 'k-9' })))?.workspaceId).toBe(OTHER_WS);
  expect((await resolve.resolve(event('question.opened', run(OTHER_INTERN, session))))?.run).toEqual({ caller: 'key:k-9' });
  expect(asked).toEqual([OTHER_INTERN]);
  expect(await resolve.resolve(event('run.completed', run(randomUUID(), session)))).toBeNull();
  expect(await resolve.resolve(event('run.completed', run('broken', session)))).toBeNull();
  // A run whose start was not seen: its caller is not known.
  expect((await resolve.resolve(event('run.completed', run(OTHER_INTERN, randomUUID()))))?.run).toEqual({ caller: null });
  // Not an integration event type of this build.
  expect(await resolve.resolve(event('intern.renamed', { intern_id: INTERN }, WS))).toBeNull();
});

it('shows an event by the intern and run rules: workspace, intern key, the run a member started', () => {
  const internEvent = { workspaceId: WS, internId: INTERN, run: null };
  const othersIntern = { workspaceId: WS, internId: OTHER_INTERN, run: null };
  const alicesRun = { workspaceId: WS, internId: INTERN, run: { caller: 'member:alice' } };
  const unknownRun = { workspaceId: WS, internId: INTERN, run: { caller: null } };
  const table: [string, Principal, boolean[]][] = [
    ['alice (user key)', principal('user'), [true, true, true, false]],
    ['alice (OAuth)', principal('oauth'), [true, true, true, false]],
    ['bob', principal('user', { memberId: 'bob' }), [true, true, false, false]],
    ['organization key', principal('organization'), [true, true, true, true]],
    ["the intern's key", principal('intern'), [true, false, true, true]],
    ['another workspace', principal('organization', { workspaceId: OTHER_WS }), [false, false, false, false]],
  ];
  for (const [who, viewer, expected] of table) {
    const seen = [internEvent, othersIntern, alicesRun, unknownRun].map((audience) => audienceIncludes(audience, viewer));
    expect({ who, seen }).toEqual({ who, seen: expected });
  }
});
