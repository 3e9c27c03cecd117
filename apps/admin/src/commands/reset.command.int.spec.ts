/**
 * `admin reset` on a database and NATS prefix of its own: it drops the database, its service roles and the prefix's
 * streams (a KV bucket of the prefix too) and nothing of a neighbouring prefix; it refuses in production, with
 * ADMIN_RESET=off, on a database in use, and without --yes when nobody is at a terminal; at a terminal (a real
 * pseudo-terminal, the built command) it asks and does nothing unless told yes.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pty from '@lydell/node-pty';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import pg from 'pg';
import { createTestDatabase, deleteTestStreams, TestDatabase, testNatsPrefix } from '@interns/testing';
import { runAdmin } from '../admin.cli';

const MAIN = resolve('dist/apps/admin/src/main.js');
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const ADMIN_URL = process.env.TEST_DATABASE_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A database with its service roles and an identity in it, and streams under a prefix: what `npm start` leaves. */
interface Install {
  db: TestDatabase;
  env: Record<string, string>;
  /** The streams the prefix should lose. */
  streams: string[];
}

let nc: NatsConnection;
let dir: string;
const installs: Install[] = [];
/** A prefix that starts like the installs' (`<prefix>_x`): its stream must survive every reset. */
const neighbours: string[] = [];

async function streamNames(): Promise<string[]> {
  const jsm = await jetstreamManager(nc);
  const names: string[] = [];
  for await (const name of jsm.streams.names()) names.push(name);
  return names;
}

async function databaseState(db: TestDatabase): Promise<{ exists: boolean; roles: number }> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    const exists = ((await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [db.name])).rowCount ?? 0) > 0;
    const roles = (await client.query('SELECT 1 FROM pg_roles WHERE starts_with(rolname, $1)', [`${db.name}_`])).rowCount ?? 0;
    return { exists, roles };
  } finally {
    await client.end();
  }
}

const admin = async (argv: string[], env: Record<string, string>, confirm?: (question: string) => Promise<boolean>): Promise<Run> => {
  let stdout = '';
  let stderr = '';
  const code = await runAdmin(argv, env, { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), envFile: null, ...(confirm ? { confirm } : {}) });
  return { code, stdout, stderr };
};

async function install(): Promise<Install> {
  const db = await createTestDatabase();
  const prefix = testNatsPrefix();
  const env = { DATABASE_URL: db.url, NATS_URL, NATS_PREFIX: prefix, DATA_DIR: join(dir, 'data') };
  expect((await admin(['db-setup'], env)).code).toBe(0);
  expect((await admin(['quickstart', '--json'], env)).code).toBe(0);
  const jsm = await jetstreamManager(nc);
  const limits = { max_bytes: 1024 * 1024 };
  await jsm.streams.add({ name: `${prefix}_lifecycle_events`, subjects: [`${prefix}.evt.lifecycle.>`], ...limits });
  await jsm.streams.add({ name: `${prefix}_run_chunks`, subjects: [`${prefix}.runs.chunks.>`], ...limits });
  // What a KV bucket named after the prefix is made of.
  await jsm.streams.add({ name: `KV_${prefix}_cache`, subjects: [`$KV.${prefix}_cache.>`], ...limits });
  const neighbour = `${prefix}_x`;
  neighbours.push(neighbour);
  await jsm.streams.add({ name: `${neighbour}_lifecycle_events`, subjects: [`${neighbour}.evt.lifecycle.>`], ...limits });
  const made = { db, env, streams: [`KV_${prefix}_cache`, `${prefix}_lifecycle_events`, `${prefix}_run_chunks`] };
  installs.push(made);
  return made;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'interns-reset-'));
  nc = await connect({ servers: NATS_URL });
});

afterAll(async () => {
  for (const { db, env } of installs) {
    await deleteTestStreams(env.NATS_PREFIX, NATS_URL).catch(() => undefined);
    await db.drop();
  }
  for (const neighbour of neighbours) await deleteTestStreams(neighbour, NATS_URL).catch(() => undefined);
  await nc?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('admin reset', () => {
  let target: Install;

  beforeAll(async () => {
    target = await install();
  });

  it('refuses in production and with ADMIN_RESET=off, before reading anything', async () => {
    const production = await admin(['reset', '--yes'], { ...target.env, NODE_ENV: 'production' });
    expect(production).toEqual({ code: 1, stdout: '', stderr: 'error: reset: refused with NODE_ENV=production (it is for development machines only)\n' });
    const off = await admin(['reset', '--yes'], { ...target.env, ADMIN_RESET: 'off' });
    expect(off).toEqual({ code: 1, stdout: '', stderr: 'error: reset: refused: ADMIN_RESET=off\n' });
    expect(await databaseState(target.db)).toEqual({ exists: true, roles: 6 });
    expect(await streamNames()).toEqual(expect.arrayContaining(target.streams));
  });

  it('refuses without --yes when nobody is at a terminal, naming what it would remove', async () => {
    const run = await admin(['reset'], target.env);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toMatch(/^error: reset: not a terminal, so nothing to confirm with: pass --yes to remove /);
    expect(run.stderr).toContain(`database "${target.db.name}" on 127.0.0.1:5432, and its roles ${target.db.name}_analytics`);
    for (const stream of target.streams) expect(run.stderr).toContain(`stream ${stream} (0 messages, 0 bytes)`);
    expect(await databaseState(target.db)).toEqual({ exists: true, roles: 6 });
  });

  it('refuses a database in use, naming who uses it', async () => {
    const user = new pg.Client({ connectionString: target.db.url, application_name: 'reset-spec-user' });
    await user.connect();
    try {
      const run = await admin(['reset', '--yes'], target.env);
      expect(run.code).toBe(1);
      expect(run.stderr).toBe(
        `error: reset: database "${target.db.name}" is in use (reset-spec-user): stop what uses it first (npm start: Ctrl-C); nothing removed\n`,
      );
    } finally {
      await user.end();
    }
    expect(await databaseState(target.db)).toEqual({ exists: true, roles: 6 });
  });

  it('removes nothing when NATS does not answer', async () => {
    const run = await admin(['reset', '--yes'], { ...target.env, NATS_URL: 'nats://127.0.0.1:1' });
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toMatch(/^error: cannot connect to NATS at nats:\/\/127\.0\.0\.1:1: /);
    expect(await databaseState(target.db)).toEqual({ exists: true, roles: 6 });
  });

  it('asks at a terminal, showing what goes, and removes nothing when not told yes', async () => {
    const questions: string[] = [];
    const run = await admin(['reset'], target.env, async (question) => {
      questions.push(question);
      return false;
    });
    expect(run).toEqual({ code: 1, stdout: '', stderr: 'error: reset: not confirmed; nothing removed\n' });
    expect(questions).toHaveLength(1);
    expect(questions[0]).toContain(`reset on database "${target.db.name}" on 127.0.0.1:5432, NATS prefix "${target.env.NATS_PREFIX}"`);
    expect(questions[0]).toMatch(/Remove all of this\?$/);
    expect(await streamNames()).toEqual(expect.arrayContaining(target.streams));
  });

  it('with --yes drops the database, its roles and the prefix streams, and nothing of the neighbouring prefix', async () => {
    const run = await admin(['reset', '--yes', '--json'], target.env);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const prefix = target.env.NATS_PREFIX;
    expect(JSON.parse(run.stdout)).toEqual({
      database: target.db.name,
      database_server: '127.0.0.1:5432',
      nats_prefix: prefix,
      nats_servers: '127.0.0.1:4222',
      env_file: null,
      dropped_database: true,
      dropped_roles: ['analytics', 'egress', 'gateway', 'lifecycle', 'runs', 'webhooks'].map((service) => `${target.db.name}_${service}`),
      deleted_streams: target.streams,
      kept_data_dir: target.env.DATA_DIR,
    });
    expect(await databaseState(target.db)).toEqual({ exists: false, roles: 0 });
    const left = await streamNames();
    expect(left.filter((name) => target.streams.includes(name))).toEqual([]);
    expect(left).toContain(`${prefix}_x_lifecycle_events`);

    const again = await admin(['reset', '--yes'], target.env);
    expect(again).toMatchObject({ code: 0, stderr: '' });
    expect(again.stdout).toContain(`Nothing to remove on database "${target.db.name}"`);
  });
});

describe('admin reset, built', () => {
  const inheritedEnv = () => {
    const { NODE_OPTIONS: _jestOnly, ...inherited } = process.env;
    return inherited;
  };

  /** The built command in a pseudo-terminal, answering `answer` to its question. */
  const atTerminal = (env: Record<string, string>, answer: string) =>
    new Promise<{ code: number; output: string }>((done, fail) => {
      const terminal = pty.spawn(process.execPath, [MAIN, 'reset'], { cols: 200, rows: 40, cwd: dir, env: { ...inheritedEnv(), ...env } });
      let output = '';
      let answered = false;
      const guard = setTimeout(() => {
        terminal.kill();
        fail(new Error(`no exit within 60 s:\n${output}`));
      }, 60_000);
      terminal.onData((data) => {
        output += data;
        if (!answered && output.includes('[y/N]')) {
          answered = true;
          terminal.write(`${answer}\r`);
        }
      });
      terminal.onExit(({ exitCode }) => {
        clearTimeout(guard);
        done({ code: exitCode, output });
      });
    });

  beforeAll(() => {
    if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run "npm run build" before this spec`);
  });

  it('asks at a terminal: no keeps everything, yes removes it; piped without --yes it refuses', async () => {
    const target = await install();
    const piped = await new Promise<Run>((done, fail) => {
      const child = spawn(process.execPath, [MAIN, 'reset'], { cwd: dir, env: { ...inheritedEnv(), ...target.env }, stdio: ['pipe', 'pipe', 'pipe'] });
      child.stdin.end();
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.on('error', fail);
      child.on('close', (code) => done({ code, stdout, stderr }));
    });
    expect(piped).toMatchObject({ code: 1, stdout: '' });
    expect(piped.stderr).toMatch(/^error: reset: not a terminal, so nothing to confirm with: pass --yes/);

    const declined = await atTerminal(target.env, 'n');
    expect(declined.code).toBe(1);
    expect(declined.output).toContain(`stream ${target.env.NATS_PREFIX}_run_chunks`);
    expect(declined.output).toContain('not confirmed; nothing removed');
    expect(await databaseState(target.db)).toEqual({ exists: true, roles: 6 });

    const confirmed = await atTerminal(target.env, 'y');
    expect(confirmed.code).toBe(0);
    expect(confirmed.output).toContain(`Removed on database "${target.db.name}"`);
    expect(await databaseState(target.db)).toEqual({ exists: false, roles: 0 });
    expect((await streamNames()).filter((name) => target.streams.includes(name))).toEqual([]);
  }, 120_000);
});
