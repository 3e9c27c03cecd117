/**
 * End to end: graceful shutdown (issue 6). Every service is rolled the way a Deployment rolls a pod (start a
 * replacement, wait until it is ready, SIGTERM the old one) while clients keep creating and listing interns,
 * and no acknowledged create may be lost; a request in flight when its service gets SIGTERM completes.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { ApiResponse, Platform, PLATFORM_SERVICES } from '@interns/testing';
import { IDENTITIES, KEYS } from '@interns/testing/e2e';

const API = '/api/v1';
/** Generous: the in-flight test holds a create while a replacement lifecycle boots on a loaded machine. */
const LIFECYCLE_ROUTE_DEADLINE_MS = 30_000;
/**
 * The held create's append waits on a table lock for as long as the roll takes: PostgreSQL's statement timeout
 * must not end it first (its default, 5 s, is for a hung database, not for a lock the test holds on purpose).
 */
const DATABASE_STATEMENT_TIMEOUT_MS = 25_000;
/** Nest's own NATS server drops the replies still due this long after close began. */
const NEST_GRACE_PERIOD_MS = 2000;
const WORKERS = 4;
/** Statuses a client may meet during a roll: all retryable, none a refusal. */
const RETRYABLE_STATUSES = [408, 500, 503];
/** The share of requests allowed to fail while services roll. */
const MAX_ERROR_RATE = 0.02;
const IDEMPOTENT_CREATE_ATTEMPTS = 20;
/** Between leaving the rotation and SIGTERM, as a gateway pod's preStop sleep (kept short here). */
const PRE_STOP_SLEEP_MS = 300;

let platform: Platform;

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

async function eventually<T>(probe: () => Promise<T>, accept: (value: T) => boolean, timeoutMs: number, what: string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (accept(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await sleep(200);
  }
}

/** True while `url` still accepts connections (its HTTP server has not closed). */
async function answers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await response.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** A slow query: appends to lifecycle's event store wait behind this lock (until COMMIT); reads do not. */
async function holdAppends(database: pg.Client): Promise<void> {
  await database.query('BEGIN');
  await database.query('LOCK TABLE lifecycle.events IN EXCLUSIVE MODE');
}

/**
 * Waits until lifecycle's append of `create` blocks on the lock. A create that was answered instead (it never
 * reached the append) fails the wait at once with its answer, so a failure says why.
 */
async function createWaitingOnLock(database: pg.Client, create: Promise<ApiResponse>): Promise<void> {
  let answered: ApiResponse | null = null;
  void create.then((response) => {
    answered = response;
  }, () => undefined);
  await eventually(
    async () => {
      if (answered !== null) throw new Error(`the create was answered before it waited: ${JSON.stringify(answered)}`);
      return (
        // Lock requests not granted on the table itself: whichever connection of lifecycle's pool makes the append.
        await database.query<{ waiting: number }>(
          `SELECT count(*)::int AS waiting FROM pg_locks WHERE relation = 'lifecycle.events'::regclass AND NOT granted`,
        )
      ).rows[0].waiting;
    },
    (waiting) => waiting > 0,
    30_000,
    'a create waiting on the lock',
  );
}

/** Resolves true once `promise` has settled, false if it is still pending. */
async function hasSettled(promise: Promise<unknown>): Promise<boolean> {
  const pending = Symbol('pending');
  return (await Promise.race([promise.then(() => true, () => true), sleep(0).then(() => pending)])) !== pending;
}

interface Intern {
  id: string;
  name: string;
}

/** Every intern the credential sees, page by page. */
async function listAll(token: string): Promise<Intern[]> {
  const interns: Intern[] = [];
  let cursor: string | undefined;
  for (;;) {
    const query = cursor === undefined ? '?limit=500' : `?limit=500&starting_after=${encodeURIComponent(cursor)}`;
    const page = await platform.api<{ data: Intern[]; has_more: boolean; next_cursor?: string }>(`${API}/interns${query}`, { token });
    expect(page.status).toBe(200);
    interns.push(...page.body.data);
    if (!page.body.has_more) return interns;
    cursor = page.body.next_cursor;
  }
}

interface Outcome {
  kind: 'create' | 'list';
  status: number;
  at: number;
  detail: string;
}

/**
 * Clients under steady load, balanced round-robin over the gateways in rotation (as a Service balances over
 * ready endpoints). Half the creates carry an Idempotency-Key and are retried with it until acknowledged;
 * the others are sent once.
 */
class SteadyLoad {
  readonly outcomes: Outcome[] = [];
  /** Acknowledged (2xx) creates: id -> name. */
  readonly acknowledged = new Map<string, string>();
  /** When each create was acknowledged, to show that the load went on during every roll. */
  readonly acknowledgedAt: number[] = [];
  /** Creates without a key that were not acknowledged: their names must not exist. */
  readonly unacknowledged: string[] = [];
  /** Creates with a key that needed a retry. */
  readonly retried: string[] = [];
  private readonly rotation: string[];
  private turn = 0;
  private running = true;
  private workers: Promise<void>[] = [];

  constructor(gateways: string[]) {
    this.rotation = [...gateways];
  }

  start(workers: number): void {
    this.workers = Array.from({ length: workers }, (_, worker) => this.work(worker));
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.workers);
  }

  /** A gateway joins the rotation once ready; the old one leaves it before it gets SIGTERM. */
  replaceGateway(previous: string, replacement: string): void {
    this.rotation.push(replacement);
    this.rotation.splice(this.rotation.indexOf(previous), 1);
  }

  get failures(): Outcome[] {
    return this.outcomes.filter((outcome) => outcome.status < 200 || outcome.status > 299);
  }

  private async work(worker: number): Promise<void> {
    for (let round = 0; this.running; round += 1) {
      const name = `roll-${worker}-${round}-${randomUUID().slice(0, 6)}`;
      if (round % 2 === 0) await this.createWithKey(name);
      else await this.createOnce(name);
      await this.list();
    }
  }

  private async createOnce(name: string): Promise<void> {
    const response = await this.send('create', `${API}/interns`, { json: { name } });
    if (response !== null && isSuccess(response)) this.acknowledge(response.body as Intern);
    else this.unacknowledged.push(name);
  }

  private async createWithKey(name: string): Promise<void> {
    const headers = { 'idempotency-key': `roll-${randomUUID()}` };
    for (let attempt = 1; attempt <= IDEMPOTENT_CREATE_ATTEMPTS; attempt += 1) {
      const response = await this.send('create', `${API}/interns`, { json: { name }, headers });
      if (response !== null && isSuccess(response)) {
        this.acknowledge(response.body as Intern);
        if (attempt > 1) this.retried.push(name);
        return;
      }
      await sleep(100 * attempt);
    }
    throw new Error(`create ${name} with an Idempotency-Key never succeeded`);
  }

  private async list(): Promise<void> {
    await this.send('list', `${API}/interns?limit=20`, {});
  }

  private acknowledge(intern: Intern): void {
    this.acknowledged.set(intern.id, intern.name);
    this.acknowledgedAt.push(Date.now());
  }

  private async send(
    kind: Outcome['kind'],
    path: string,
    request: { json?: unknown; headers?: Record<string, string> },
  ): Promise<ApiResponse | null> {
    const baseUrl = this.rotation[(this.turn += 1) % this.rotation.length];
    try {
      const response = await platform.api(path, { ...request, token: KEYS.alice, baseUrl });
      this.outcomes.push({ kind, status: response.status, at: Date.now(), detail: isSuccess(response) ? '' : response.text });
      return response;
    } catch (error) {
      this.outcomes.push({ kind, status: 0, at: Date.now(), detail: `${baseUrl}: ${(error as Error).message}` });
      return null;
    }
  }
}

const isSuccess = (response: ApiResponse) => response.status >= 200 && response.status <= 299;

beforeAll(async () => {
  platform = await Platform.start({
    env: {
      LIFECYCLE_ROUTE_DEADLINE_MS: String(LIFECYCLE_ROUTE_DEADLINE_MS),
      DATABASE_STATEMENT_TIMEOUT_MS: String(DATABASE_STATEMENT_TIMEOUT_MS),
      // The steady load creates hundreds of interns in one workspace: the tenant cap is not what this measures.
      MAX_INTERNS_PER_WORKSPACE: '100000',
    },
  });
  await platform.applyIdentities(IDENTITIES);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

it('completes a create in flight when lifecycle gets SIGTERM, while its replacement takes new requests', async () => {
  const database = new pg.Client({ connectionString: platform.database.url });
  await database.connect();
  try {
    await holdAppends(database);
    const name = `in-flight-${randomUUID().slice(0, 8)}`;
    const create = platform.api(`${API}/interns`, { token: KEYS.alice, json: { name } });
    await createWaitingOnLock(database, create);

    const old = platform.process('lifecycle');
    const rolled = platform.rollService('lifecycle');
    // The old process' HTTP server closes right before it drains its NATS subscriptions.
    await eventually(() => answers(`${old.url}/health/live`), (up) => !up, 60_000, 'the old lifecycle closing HTTP');
    // New requests go to the replacement while the old one still holds the create.
    const listed = await platform.api(`${API}/interns`, { token: KEYS.alice });
    expect(listed.status).toBe(200);
    await sleep(NEST_GRACE_PERIOD_MS + 500);
    expect(await hasSettled(create)).toBe(false);

    await database.query('COMMIT');
    const created = await create;
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name });
    const { exit } = await rolled;
    expect(exit).toEqual({ code: 0, signal: null });
    const fetched = await platform.api(`${API}/interns/${created.body.id}`, { token: KEYS.alice });
    expect(fetched.status).toBe(200);
    expect(fetched.body).toMatchObject({ id: created.body.id, name });
  } finally {
    await database.query('ROLLBACK').catch(() => undefined);
    await database.end();
  }
}, 90_000);

it('completes a request in flight on a gateway that gets SIGTERM, then closes its kept-alive connection', async () => {
  const database = new pg.Client({ connectionString: platform.database.url });
  await database.connect();
  try {
    const old = platform.process('gateway');
    // A kept-alive connection (Node's global agent) that the create then reuses.
    expect((await platform.api('/health/live', { baseUrl: old.url })).headers.get('connection')).toBe('keep-alive');
    await holdAppends(database);
    const name = `in-flight-${randomUUID().slice(0, 8)}`;
    const create = platform.api(`${API}/interns`, { token: KEYS.alice, json: { name }, baseUrl: old.url });
    await createWaitingOnLock(database, create);

    const rolled = platform.rollService('gateway');
    await eventually(() => answers(`${old.url}/health/live`), (up) => !up, 60_000, 'the old gateway refusing connections');
    await sleep(500);
    expect(await hasSettled(create)).toBe(false);

    await database.query('COMMIT');
    const created = await create;
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name });
    // The client is told to reconnect (to a replica that is not going away), so nothing holds the old one open.
    expect(created.headers.get('connection')).toBe('close');
    const { exit } = await rolled;
    expect(exit).toEqual({ code: 0, signal: null });
    expect((await platform.api(`${API}/interns/${created.body.id}`, { token: KEYS.alice })).status).toBe(200);
  } finally {
    await database.query('ROLLBACK').catch(() => undefined);
    await database.end();
  }
}, 90_000);

it('loses no acknowledged create while every service is rolled under steady load', async () => {
  const load = new SteadyLoad(platform.gatewayUrls);
  load.start(WORKERS);
  const rolls: { service: string; began: number; ended: number; exit: unknown }[] = [];
  try {
    await sleep(1000);
    for (const service of PLATFORM_SERVICES) {
      const began = Date.now();
      const { exit } = await platform.rollService(service, {
        beforeStop: async (previous, replacement) => {
          if (service !== 'gateway') return;
          load.replaceGateway(previous.url, replacement.url);
          // The pod's preStop sleep: requests already sent reach it; those still running then must finish.
          await sleep(PRE_STOP_SLEEP_MS);
        },
      });
      rolls.push({ service, began, ended: Date.now(), exit });
      await sleep(500);
    }
  } finally {
    await load.stop();
  }

  const failures = load.failures;
  const errorRate = failures.length / load.outcomes.length;
  console.log(
    `rolling restart: ${load.outcomes.length} requests, ${load.acknowledged.size} creates acknowledged, ` +
      `${failures.length} failed (${(errorRate * 100).toFixed(2)}%), ${load.retried.length} keyed creates retried; ` +
      rolls.map((roll) => `${roll.service} rolled in ${roll.ended - roll.began} ms`).join(', ') +
      (failures.length > 0 ? `\nfailures: ${JSON.stringify(failures.slice(0, 10))}` : ''),
  );

  // Every old process drained and exited cleanly.
  expect(rolls.map((roll) => [roll.service, roll.exit])).toEqual(
    PLATFORM_SERVICES.map((service) => [service, { code: 0, signal: null }]),
  );
  // The load went on through every roll.
  for (const roll of rolls) {
    expect(load.acknowledgedAt.filter((at) => at >= roll.began && at <= roll.ended).length).toBeGreaterThan(0);
  }
  // Failures are rare and only ever retryable answers (never a dropped connection or a refusal).
  expect(failures.filter((failure) => !RETRYABLE_STATUSES.includes(failure.status))).toEqual([]);
  expect(errorRate).toBeLessThanOrEqual(MAX_ERROR_RATE);

  // Every acknowledged create is there, by id and in the full list.
  for (const [id, name] of load.acknowledged) {
    const fetched = await platform.api<Intern>(`${API}/interns/${id}`, { token: KEYS.alice });
    expect([fetched.status, fetched.body.name]).toEqual([200, name]);
  }
  const all = await listAll(KEYS.alice);
  const listedIds = new Set(all.map((intern) => intern.id));
  expect([...load.acknowledged.keys()].filter((id) => !listedIds.has(id))).toEqual([]);
  // No create committed behind the client's back: one intern per acknowledged name (a keyed retry
  // returned the intern of its first attempt), none for a create that was not acknowledged.
  const rolledNames = all.map((intern) => intern.name).filter((name) => name.startsWith('roll-'));
  expect(rolledNames.sort()).toEqual([...load.acknowledged.values()].sort());
  expect(load.unacknowledged.filter((name) => rolledNames.includes(name))).toEqual([]);

  // The integration events of every acknowledged create reached analytics across the lifecycle and
  // analytics rolls (relay leadership and the durable consumer changed hands).
  const database = new pg.Client({ connectionString: platform.database.url });
  await database.connect();
  try {
    const ids = [...load.acknowledged.keys()];
    await eventually(
      async () =>
        (
          await database.query<{ present: number }>(
            'SELECT count(*)::int AS present FROM analytics.intern_facts WHERE intern_id = ANY($1)',
            [ids],
          )
        ).rows[0].present,
      (present) => present === ids.length,
      30_000,
      `all ${ids.length} acknowledged interns in analytics`,
    );
  } finally {
    await database.end();
  }
}, 150_000);
