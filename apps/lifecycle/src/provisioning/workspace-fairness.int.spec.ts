import { randomUUID } from 'node:crypto';
import { eventually, LifecycleHarness, principal, reasonOf } from '../testing/lifecycle.harness';

/**
 * CONTRACT section 22, per workspace: MAX_INTERNS_PER_WORKSPACE interns not torn down, and at most
 * PROVISION_CONCURRENCY_PER_WORKSPACE of the system's provisioning and teardown slots, so one workspace can
 * neither fill the database with interns nor keep every other workspace waiting.
 */
describe('lifecycle: fairness between workspaces', () => {
  let h: LifecycleHarness;

  beforeAll(async () => {
    h = await LifecycleHarness.start({
      PROVISION_CONCURRENCY: '3',
      PROVISION_CONCURRENCY_PER_WORKSPACE: '2',
      MAX_INTERNS_PER_WORKSPACE: '3',
    });
    await h.startLifecycle();
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('gives one workspace at most 2 of the 3 provisioning slots, so another workspace provisions meanwhile', async () => {
    const greedy = principal(randomUUID());
    const other = principal(randomUUID());
    const disk = h.driver.hold('prepareDisk');
    const first = (await h.create(greedy, { name: 'g-one', provision: true })).intern;
    await disk.arrived;
    const second = (await h.create(greedy, { name: 'g-two', provision: true })).intern;
    const third = (await h.create(greedy, { name: 'g-three', provision: true })).intern;
    const theirs = (await h.create(other, { name: 'o-one', provision: true })).intern;

    const statuses = async () => ({
      first: (await h.get(greedy, first.id)).status,
      second: (await h.get(greedy, second.id)).status,
      third: (await h.get(greedy, third.id)).status,
      theirs: (await h.get(other, theirs.id)).status,
    });
    const expected = { first: 'provisioning', second: 'provisioning', third: 'queued', theirs: 'provisioning' };
    await eventually(async () => expect(await statuses()).toEqual(expected));
    // A free global slot does not go to the greedy workspace's third request while its two provision.
    await new Promise((done) => setTimeout(done, 500));
    expect(await statuses()).toEqual(expected);

    disk.release();
    await h.untilStatus(greedy, third.id, 'running');
    await h.untilStatus(other, theirs.id, 'running');
  });

  it('keeps one workspace to 2 teardown steps in flight, so another workspace is torn down meanwhile', async () => {
    const greedy = principal(randomUUID());
    const other = principal(randomUUID());
    const mine = await Promise.all(['t-one', 't-two', 't-three'].map(async (name) => (await h.create(greedy, { name })).intern.id));
    const theirs = (await h.create(other, { name: 't-theirs' })).intern.id;
    const archive = h.driver.hold('archive');
    for (const id of mine) await h.delete(greedy, id);
    await archive.arrived;
    await h.delete(other, theirs);

    const archivesAsked = () => mine.filter((id) => h.driver.count('archive', id) > 0).length;
    await eventually(async () => expect(h.driver.count('archive', theirs)).toBe(1));
    expect(archivesAsked()).toBe(2);

    archive.release();
    await eventually(async () => expect((await h.list(greedy)).data).toEqual([]));
    expect(mine.map((id) => h.driver.count('archive', id))).toEqual([1, 1, 1]);
  });

  it('refuses a create beyond MAX_INTERNS_PER_WORKSPACE with 409 limit_reached, also when creates race', async () => {
    const crowded = principal(randomUUID());
    const outcomes = await Promise.all(
      ['c-one', 'c-two', 'c-three', 'c-four', 'c-five'].map((name) => reasonOf(h.create(crowded, { name }))),
    );
    expect(outcomes.sort()).toEqual(['limit_reached', 'limit_reached', 'ok', 'ok', 'ok']);
    await expect(h.create(crowded, { name: 'c-six' })).rejects.toMatchObject({
      payload: { reason: 'limit_reached', message: expect.stringContaining('MAX_INTERNS_PER_WORKSPACE') },
    });
    // Another workspace is not affected.
    expect(await reasonOf(h.create(principal(randomUUID()), { name: 'c-one' }))).toBe('ok');

    // Room again once one is torn down (a deleted intern counts until its teardown completes).
    const [victim] = (await h.list(crowded)).data;
    if (victim === undefined) throw new Error('no intern to delete');
    await h.delete(crowded, victim.id);
    await eventually(async () => expect(await reasonOf(h.create(crowded, { name: 'c-seven' }))).toBe('ok'));
  });
});
