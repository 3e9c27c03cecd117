import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { connect } from '@nats-io/transport-node';
import { NATS_PROCESSES } from '@interns/contracts';
import { natsSecurityOptions } from '@interns/messaging';
import { startNatsServer } from '@interns/testing';
import { UsageError } from '../admin.errors';
import { natsCredsDirOf, parseNatsSetupArgs, runNatsSetup } from './nats-setup.command';

const run = promisify(execFile);
let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'nats-setup-'));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('nats-setup', () => {
  it('writes a configuration nats-server accepts, with one nkey user per process and no anonymous access', async () => {
    const output = await runNatsSetup(parseNatsSetupArgs(['--dir', join(root, 'nats'), '--prefix', 'acme'], 'interns'));
    const config = await readFile(output.config, 'utf8');
    for (const { nkey } of Object.values(output.users)) expect(config).toContain(`nkey: "${nkey}"`);
    expect(Object.keys(output.users)).toEqual(['gateway', 'lifecycle', 'runs', 'analytics', 'webhooks', 'egress', 'admin']);
    expect(config).not.toMatch(/^\s*no_auth_user/m);
    expect(config).toContain(`store_dir: "${join(root, 'nats', 'jetstream')}"`);
    const { stderr } = await run(process.env.NATS_SERVER_BIN ?? '/usr/sbin/nats-server', ['-c', output.config, '-t']);
    expect(stderr).toMatch(/is valid/);
  });

  it('keeps existing keys when run again and makes a new one for a deleted file', async () => {
    const dir = join(root, 'nats');
    const first = await runNatsSetup(parseNatsSetupArgs(['--dir', dir], 'interns'));
    await unlink(first.users.runs.creds);
    const second = await runNatsSetup(parseNatsSetupArgs(['--dir', dir, '--store-dir', '/var/lib/nats'], 'interns'));
    expect(second.users.gateway.nkey).toBe(first.users.gateway.nkey);
    expect(second.users.runs.nkey).not.toBe(first.users.runs.nkey);
    expect(await readFile(second.config, 'utf8')).toContain('store_dir: "/var/lib/nats"');
  });

  it('--split: one directory per mount, each holding only its own file, which a process connects with', async () => {
    const storeDir = join(root, 'jetstream');
    const options = parseNatsSetupArgs(['--dir', join(root, 'nats'), '--prefix', 'acme', '--store-dir', storeDir, '--split'], 'interns');
    const output = await runNatsSetup(options);
    expect((await readdir(options.dir)).sort()).toEqual([...NATS_PROCESSES, 'server'].sort());
    expect(output.config).toBe(join(options.dir, 'server', 'nats-server.conf'));
    expect(await readdir(join(options.dir, 'server'))).toEqual(['nats-server.conf']);
    for (const process of NATS_PROCESSES) {
      const dir = natsCredsDirOf(options, process);
      expect({ process, files: await readdir(dir), mode: (await stat(dir)).mode & 0o777 }).toEqual({ process, files: [`${process}.creds`], mode: 0o700 });
    }
    expect(await readFile(output.config, 'utf8')).toContain(`store_dir: ${JSON.stringify(storeDir)}`);

    // The broker as a container runs it: only the configuration (which turns JetStream on and names the store).
    const nats = await startNatsServer({ config: output.config });
    try {
      const nc = await connect({ servers: nats.url, maxReconnectAttempts: 0, ...natsSecurityOptions('gateway', { natsCredsDir: natsCredsDirOf(options, 'gateway'), natsTlsCa: null }) });
      await nc.flush();
      await nc.close();
      await expect(connect({ servers: nats.url, maxReconnectAttempts: 0 })).rejects.toThrow(/Authorization Violation/i);
    } finally {
      await nats.remove();
    }
  });

  it('refuses a missing --dir and a bad prefix', () => {
    expect(() => parseNatsSetupArgs([], 'interns')).toThrow(new UsageError('nats-setup: missing --dir <directory>'));
    expect(() => parseNatsSetupArgs(['--dir', root, '--prefix', 'a..b'], 'interns')).toThrow(UsageError);
  });
});
