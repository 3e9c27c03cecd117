import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import pg from 'pg';
import {
  CreateInternBody,
  CreateInternReply,
  InternIconReply,
  InternList,
  InternStatus,
  InternView,
  Principal,
  RecordChatappInstallReply,
  RequestContext,
  subjectsFor,
} from '@interns/contracts';
import { connectNats, RemoteServiceError, RpcClient } from '@interns/messaging';
import { createTestDatabase, deleteTestStreams, freePort, ServiceProcess, startServiceProcess, TestDatabase, testNatsPrefix } from '@interns/testing';
import { RuntimeDriverStandIn, RuntimeOp } from './runtime-driver.stand-in';

const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const ENTRY = resolve('dist/apps/lifecycle/src/main.js');
export const INTERN_DOMAIN = 'interns.test';

const PROVISIONING_STEP_OF: Partial<Record<RuntimeOp, string>> = {
  prepareDisk: 'disk_prepare',
  boot: 'runtime_boot',
  health: 'health_await',
};
const TEARDOWN_STEP_OF: Partial<Record<RuntimeOp, string>> = {
  endRuns: 'runs_end',
  stop: 'runtime_stop',
  archive: 'workspace_archive',
  // Asked first in the disk_remove step.
  purgeTranscripts: 'disk_remove',
  purgeEgressLog: 'disk_remove',
  removeDisk: 'disk_remove',
};

export function principal(workspaceId: string, overrides: Partial<Principal> = {}): Principal {
  return {
    kind: 'user',
    organizationId: 'org-test',
    workspaceId,
    memberId: 'member-1',
    keyId: 'key-1',
    internId: null,
    scopes: [],
    chatappInstallRequired: false,
    ...overrides,
  };
}

/**
 * The lifecycle service as built (`dist/`), run as child processes on a database and NATS prefix of its
 * own, with a stand-in runtime driver, a typed client and SQL access for assertions.
 */
export class LifecycleHarness {
  private readonly processes: ServiceProcess[] = [];

  private constructor(
    readonly db: TestDatabase,
    readonly prefix: string,
    readonly nc: NatsConnection,
    readonly pool: pg.Pool,
    readonly driver: RuntimeDriverStandIn,
    private readonly env: Record<string, string>,
    private readonly dataDir: string,
  ) {}

  static async start(env: Record<string, string> = {}): Promise<LifecycleHarness> {
    const db = await createTestDatabase();
    const prefix = testNatsPrefix();
    const pool = new pg.Pool({ connectionString: db.url, max: 3 });
    // An idle client cut by the database's drop at teardown (a stand-in's late lookup checked one out) must not fail
    // the suite as an unhandled 'error' event: the tests' own queries still report their errors.
    pool.on('error', () => undefined);
    // Lifecycle keeps files under DATA_DIR (the daemon signing key): never the checkout's own .data.
    const dataDir = await mkdtemp(join(tmpdir(), 'interns-lifecycle-'));
    const nc = await connectNats({ url: NATS_URL, name: 'lifecycle-harness' });
    const driver = await RuntimeDriverStandIn.start({
      natsUrl: NATS_URL,
      prefix,
      inspect: (op, internId) => completionRecorded(pool, op, internId),
    });
    return new LifecycleHarness(db, prefix, nc, pool, driver, {
      DATABASE_URL: db.url,
      NATS_URL,
      NATS_PREFIX: prefix,
      INTERN_DOMAIN,
      DATA_DIR: dataDir,
      ...env,
    }, dataDir);
  }

  /** Starts one more lifecycle replica and waits until it is ready. */
  async startLifecycle(env: Record<string, string> = {}): Promise<ServiceProcess> {
    const port = await freePort();
    const started = await startServiceProcess({
      entry: ENTRY,
      port,
      env: { ...this.env, LIFECYCLE_PORT: String(port), ...env },
    });
    this.processes.push(started);
    return started;
  }

  async stop(): Promise<void> {
    for (const process of this.processes) process.kill();
    await Promise.all(this.processes.map((process) => process.exited));
    await this.driver.close();
    await this.nc.close();
    await deleteTestStreams(this.prefix, NATS_URL).catch(() => undefined);
    await this.pool.end();
    await this.db.drop();
    await rm(this.dataDir, { recursive: true, force: true });
  }

  // ---- the lifecycle subjects, as the gateway calls them ----

  private request<T>(subject: keyof ReturnType<typeof subjectsFor>['lifecycle'], data: unknown): Promise<T> {
    const target = subjectsFor(this.prefix).lifecycle[subject];
    if (typeof target !== 'string') throw new Error(`${subject} is not a subject`);
    return new RpcClient(this.nc).request<T>(target, data, { timeoutMs: 10_000 });
  }

  private context(who: Principal): RequestContext {
    return { correlationId: randomUUID(), principal: who };
  }

  create(who: Principal, body: CreateInternBody): Promise<CreateInternReply> {
    return this.request('createIntern', { context: this.context(who), body, idempotencyKey: null });
  }

  get(who: Principal, internId: string): Promise<InternView> {
    return this.request('getIntern', { context: this.context(who), internId });
  }

  list(who: Principal, statuses: InternStatus[] | null = null): Promise<InternList> {
    return this.request('listInterns', {
      context: this.context(who),
      limit: 500,
      statuses,
      startingAfter: null,
      workspaceId: null,
    });
  }

  provision(who: Principal, internId: string): Promise<{ provisioning: true }> {
    return this.request('provisionIntern', { context: this.context(who), internId });
  }

  suspend(who: Principal, internId: string): Promise<{ suspended: true }> {
    return this.request('suspendIntern', { context: this.context(who), internId });
  }

  delete(who: Principal, internId: string, acknowledgeWorkspaceLoss?: boolean): Promise<{ deleting: true }> {
    const body = acknowledgeWorkspaceLoss === undefined ? {} : { acknowledge_workspace_loss: acknowledgeWorkspaceLoss };
    return this.request('deleteIntern', { context: this.context(who), internId, body });
  }

  icon(who: Principal, internId: string): Promise<InternIconReply> {
    return this.request('internIcon', { context: this.context(who), internId });
  }

  recordChatappInstall(workspaceId: string): Promise<RecordChatappInstallReply> {
    return this.request('recordChatappInstall', { workspaceId, correlationId: randomUUID() });
  }

  // ---- assertions ----

  async sql<T = Record<string, unknown>>(text: string, values: unknown[] = []): Promise<T[]> {
    return (await this.pool.query(text, values)).rows as T[];
  }

  /** Event types of an intern's stream, in order. */
  async eventTypes(internId: string): Promise<string[]> {
    const rows = await this.sql<{ type: string }>(
      `SELECT type FROM lifecycle.events WHERE stream_id = $1 ORDER BY stream_version`,
      [`intern-${internId}`],
    );
    return rows.map((row) => row.type);
  }

  async events(internId: string): Promise<{ type: string; data: Record<string, unknown>; global_position: string }[]> {
    return this.sql(
      `SELECT type, data, global_position::text FROM lifecycle.events WHERE stream_id = $1 ORDER BY stream_version`,
      [`intern-${internId}`],
    );
  }

  /** Polls the intern until `done` holds; answers the last view. */
  async until(who: Principal, internId: string, done: (view: InternView) => boolean, timeoutMs = 15_000): Promise<InternView> {
    let last: InternView | undefined;
    await eventually(async () => {
      last = await this.get(who, internId);
      if (!done(last)) throw new Error(`intern ${internId} is ${JSON.stringify(last)}`);
    }, timeoutMs);
    return last as InternView;
  }

  untilStatus(who: Principal, internId: string, status: InternStatus, timeoutMs?: number): Promise<InternView> {
    return this.until(who, internId, (view) => view.status === status, timeoutMs);
  }

  /** Polls until the intern is gone (get answers not_found). */
  async untilGone(who: Principal, internId: string, timeoutMs = 15_000): Promise<void> {
    await eventually(async () => {
      if ((await reasonOf(this.get(who, internId))) !== 'not_found') throw new Error(`intern ${internId} still there`);
    }, timeoutMs);
  }
}

/** Retries `check` until it passes or `timeoutMs` elapses (then rethrows its last error). */
export async function eventually(check: () => Promise<void>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await check();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((done) => setTimeout(done, 50));
    }
  }
}

/** The refusal reason a request ends with, or 'ok'. */
export async function reasonOf(pending: Promise<unknown>): Promise<string> {
  try {
    await pending;
    return 'ok';
  } catch (error) {
    if (error instanceof RemoteServiceError) return error.payload.reason;
    throw error;
  }
}

/**
 * Whether the step a driver call serves was already recorded as completed when the call arrived (null when
 * the call serves no step, e.g. stopping a suspended intern's runtime). A true here means a step ran twice.
 */
async function completionRecorded(pool: pg.Pool, op: RuntimeOp, internId: string): Promise<boolean | null> {
  const streamId = `intern-${internId}`;
  const provisioningStep = PROVISIONING_STEP_OF[op];
  if (provisioningStep !== undefined) {
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM lifecycle.events
        WHERE stream_id = $1 AND type = 'ProvisioningStepCompleted' AND data->>'step' = $2
          AND (data->>'attempt')::int = (SELECT max((data->>'attempt')::int) FROM lifecycle.events
                                          WHERE stream_id = $1 AND type = 'ProvisionRequested')`,
      [streamId, provisioningStep],
    );
    return rows[0].n > 0;
  }
  const { rows: deletions } = await pool.query(
    `SELECT count(*)::int AS n FROM lifecycle.events WHERE stream_id = $1 AND type = 'DeletionRequested'`,
    [streamId],
  );
  if (deletions[0].n === 0) return null;
  const { rows } = await pool.query(
    `SELECT count(*)::int AS n FROM lifecycle.events
      WHERE stream_id = $1 AND type = 'TeardownStepCompleted' AND data->>'step' = $2`,
    [streamId, TEARDOWN_STEP_OF[op]],
  );
  return rows[0].n > 0;
}
