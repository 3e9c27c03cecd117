import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, NatsConnection } from '@nats-io/transport-node';
import { extract, list } from 'tar';
import type {
  RuntimeArchiveResult,
  RuntimeBootRequest,
  RuntimeHealthReply,
  RuntimeRequest,
  RuntimeStepReply,
  Subjects,
} from '@interns/contracts';
import { subjectsFor } from '@interns/contracts';
import { bootstrapService, RunningService } from '@interns/service-runtime';
import { RemoteServiceError, RpcClient } from '@interns/messaging';
import { createTestDatabase, TestDatabase, testNatsPrefix } from '@interns/testing';
import { RUNS_MIGRATIONS } from '../migrations';
import { RunsModule } from '../runs.module';

const ARCHIVE_NAME = /^[0-9a-f-]{36}-\d{4}-\d{2}-\d{2}T\d{6}\.\d{3}Z\.tar\.gz$/;

describe('runtime driver over NATS', () => {
  const prefix = testNatsPrefix();
  const subjects: Subjects['runs'] = subjectsFor(prefix).runs;
  let db: TestDatabase;
  let root: string;
  let dataDir: string;
  let nc: NatsConnection;
  let rpc: RpcClient;

  function startRuns(env: Record<string, string> = {}): Promise<RunningService> {
    return bootstrapService({
      service: 'runs',
      schema: 'runs',
      migrations: RUNS_MIGRATIONS,
      port: (config) => config.runsPort,
      rootModule: (deps) => RunsModule.forRoot(deps),
      env: { DATABASE_URL: db.url, NATS_PREFIX: prefix, RUNS_PORT: '0', DATA_DIR: dataDir, ...env },
      handleSignals: false,
      logger: false,
    });
  }

  function call<T = RuntimeStepReply>(subject: string, data: RuntimeRequest): Promise<T> {
    return rpc.request<T>(subject, data, { timeoutMs: 5000, correlationId: data.correlationId });
  }

  /** Sends the same request twice and expects the same answer both times (steps are retried blindly). */
  async function twice<T>(subject: string, data: RuntimeRequest): Promise<T> {
    const first = await call<T>(subject, data);
    expect(await call<T>(subject, data)).toEqual(first);
    return first;
  }

  interface TestIntern {
    request: RuntimeRequest;
    boot: (model: string | null) => RuntimeBootRequest;
    workspace: string;
  }

  function intern(): TestIntern {
    const internId = randomUUID();
    const request = { internId, correlationId: randomUUID() };
    return {
      request,
      boot: (model) => ({ ...request, model, hostname: `ada-${internId.slice(0, 8)}.interns.localhost` }),
      workspace: join(dataDir, 'workspaces', internId),
    };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    root = await mkdtemp(join(tmpdir(), 'runs-runtime-'));
    dataDir = join(root, 'data');
    nc = await connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
    rpc = new RpcClient(nc);
  });

  afterAll(async () => {
    await nc?.close();
    await db?.drop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  describe('with the built-in provider only', () => {
    let runs: RunningService;

    beforeAll(async () => {
      runs = await startRuns();
    });

    afterAll(async () => {
      await runs?.close();
    });

    it('prepares, boots, checks, stops, reboots, archives and removes a runtime, each step repeatable', async () => {
      const { request, boot, workspace } = intern();

      expect(await twice(subjects.runtimePrepareDisk, request)).toEqual({ ok: true });
      expect((await stat(workspace)).isDirectory()).toBe(true);
      await mkdir(join(workspace, 'notes'));
      await writeFile(join(workspace, 'notes', 'plan.md'), '# the plan\n');
      expect(await call(subjects.runtimePrepareDisk, request)).toEqual({ ok: true });
      expect(await readFile(join(workspace, 'notes', 'plan.md'), 'utf8')).toBe('# the plan\n');
      expect(await call(subjects.runtimeHealth, request)).toEqual({
        ok: true,
        healthy: false,
        detail: 'runtime never booted',
      });

      expect(await twice(subjects.runtimeBoot, boot('local/scripted'))).toEqual({ ok: true });
      expect(await twice<RuntimeStepReply<RuntimeHealthReply>>(subjects.runtimeHealth, request)).toEqual({
        ok: true,
        healthy: true,
        detail: `runtime running local/scripted as ${boot(null).hostname}`,
      });

      expect(await twice(subjects.runtimeStop, request)).toEqual({ ok: true });
      const stopped = { ok: true, healthy: false, detail: 'runtime stopped' };
      expect(await twice(subjects.runtimeHealth, request)).toEqual(stopped);
      expect(await readFile(join(workspace, 'notes', 'plan.md'), 'utf8')).toBe('# the plan\n');

      // Null means DEFAULT_MODEL, local/scripted here.
      expect(await twice(subjects.runtimeBoot, boot(null))).toEqual({ ok: true });
      expect(await call(subjects.runtimeHealth, request)).toMatchObject({ ok: true, healthy: true });

      // Teardown order: end runs, stop, archive, remove disk.
      expect(await twice(subjects.runtimeEndRuns, request)).toEqual({ ok: true });
      expect(await call(subjects.runtimeStop, request)).toEqual({ ok: true });

      const archived = await call<RuntimeStepReply<RuntimeArchiveResult>>(subjects.runtimeArchive, request);
      if (!archived.ok || archived.archivePath === null) throw new Error(`no archive: ${JSON.stringify(archived)}`);
      const archivesDir = join(dataDir, 'archives');
      expect(archived.archivePath.startsWith(`${archivesDir}/`)).toBe(true);
      expect(archived.archivePath.slice(archivesDir.length + 1)).toMatch(ARCHIVE_NAME);
      expect(archived.archivePath.slice(archivesDir.length + 1).startsWith(request.internId)).toBe(true);

      const entries: string[] = [];
      await list({ file: archived.archivePath, onReadEntry: (entry) => void entries.push(entry.path) });
      expect(entries).toEqual(
        expect.arrayContaining(['', 'notes/', 'notes/plan.md'].map((path) => `${request.internId}/${path}`)),
      );
      expect(entries.some((path) => path.includes('.runtime.json'))).toBe(false);
      const restored = join(root, 'restored');
      await mkdir(restored);
      await extract({ file: archived.archivePath, cwd: restored });
      expect(await readFile(join(restored, request.internId, 'notes', 'plan.md'), 'utf8')).toBe('# the plan\n');

      // A repeated archive step writes a complete archive again (the newest one is the workspace's last state).
      const again = await call<RuntimeStepReply<RuntimeArchiveResult>>(subjects.runtimeArchive, request);
      expect(again).toEqual({ ok: true, archivePath: expect.stringMatching(/\.tar\.gz$/) });
      const names = await readdir(archivesDir);
      expect(names.every((name) => ARCHIVE_NAME.test(name))).toBe(true);

      expect(await twice(subjects.runtimeRemoveDisk, request)).toEqual({ ok: true });
      await expect(stat(workspace)).rejects.toMatchObject({ code: 'ENOENT' });
      expect(await readdir(join(dataDir, 'workspaces'))).toEqual([]);
      expect(await call(subjects.runtimeHealth, request)).toEqual({
        ok: true,
        healthy: false,
        detail: 'no workspace disk',
      });
      expect(await twice(subjects.runtimeArchive, request)).toEqual({ ok: true, archivePath: null });
      expect(await call(subjects.runtimeStop, request)).toEqual({ ok: true });
      expect(await call(subjects.runtimeEndRuns, request)).toEqual({ ok: true });
      expect(await call(subjects.runtimeBoot, boot('local/scripted'))).toEqual({
        ok: false,
        message: `the workspace disk of intern ${request.internId} is not prepared`,
      });
    });

    it('fails the boot of a model no configured provider serves, saying so', async () => {
      const { request, boot } = intern();
      await call(subjects.runtimePrepareDisk, request);
      expect(await twice(subjects.runtimeBoot, boot('openai/gpt-4.1'))).toEqual({
        ok: false,
        message: 'model "openai/gpt-4.1" is served by no configured provider (MODEL_API_BASE_URL is not set)',
      });
      expect(await call(subjects.runtimeBoot, boot('local/other'))).toMatchObject({ ok: false });
      expect(await call(subjects.runtimeHealth, request)).toEqual({
        ok: true,
        healthy: false,
        detail: 'runtime never booted',
      });
    });

    it('refuses an intern id that is not a uuid before touching the filesystem', async () => {
      const refusal = call(subjects.runtimePrepareDisk, { internId: '../escape', correlationId: randomUUID() });
      await expect(refusal).rejects.toBeInstanceOf(RemoteServiceError);
      await expect(refusal).rejects.toMatchObject({ payload: { reason: 'invalid_body' } });
      await expect(stat(join(dataDir, 'escape'))).rejects.toMatchObject({ code: 'ENOENT' });
    });
  });

  describe('after a restart, with an OpenAI-compatible provider and an unwritable archive location', () => {
    let survivor: TestIntern;
    let runs: RunningService;
    let archiveDir: string;

    beforeAll(async () => {
      survivor = intern();
      const before = await startRuns();
      try {
        await call(subjects.runtimePrepareDisk, survivor.request);
        await call(subjects.runtimeBoot, survivor.boot('local/scripted'));
      } finally {
        await before.close();
      }
      // A regular file where a directory should be: writing under it fails with ENOTDIR, even as root.
      await writeFile(join(root, 'blocker'), 'not a directory');
      archiveDir = join(root, 'blocker', 'archives');
      runs = await startRuns({ MODEL_API_BASE_URL: 'http://127.0.0.1:9/v1', ARCHIVE_DIR: archiveDir });
    });

    afterAll(async () => {
      await runs?.close();
    });

    it('keeps runtime state across a restart of the runs service', async () => {
      expect(await call(subjects.runtimeHealth, survivor.request)).toEqual({
        ok: true,
        healthy: true,
        detail: `runtime running local/scripted as ${survivor.boot(null).hostname}`,
      });
    });

    it('boots a model of another author on the OpenAI-compatible provider', async () => {
      const { request, boot } = intern();
      await call(subjects.runtimePrepareDisk, request);
      expect(await twice(subjects.runtimeBoot, boot('openai/gpt-4.1'))).toEqual({ ok: true });
      expect(await call(subjects.runtimeHealth, request)).toEqual({
        ok: true,
        healthy: true,
        detail: `runtime running openai/gpt-4.1 as ${boot(null).hostname}`,
      });
    });

    it('fails the archive step naming the OS reason, and keeps the workspace', async () => {
      const { request, workspace } = survivor;
      await writeFile(join(workspace, 'keep.txt'), 'precious');
      const reply = await twice<RuntimeStepReply<RuntimeArchiveResult>>(subjects.runtimeArchive, request);
      expect(reply).toEqual({
        ok: false,
        message: expect.stringContaining(`archive location ${archiveDir} cannot be written: ENOTDIR: not a directory`),
      });
      expect(await readFile(join(workspace, 'keep.txt'), 'utf8')).toBe('precious');
      expect(await call(subjects.runtimeHealth, request)).toMatchObject({ ok: true, healthy: true });
    });
  });
});
