/**
 * End to end: the built `interns` client as a real process against the real platform. Login and its credentials
 * file, the lifecycle commands' `--json` (the API's JSON), exit codes and envelopes of refusals, files both ways,
 * the vault, egress, invoke/runs/logs and a chat without a terminal.
 */
import { randomBytes } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Platform } from '@interns/testing';
import { CliHome, envelopeOf, KEYS, startPlatform } from './cli.fixture';

let platform: Platform;
let home: CliHome;
let api: string;
/** A running intern the later tests share. */
let worker: { id: string; name: string };

beforeAll(async () => {
  platform = await startPlatform();
  home = await CliHome.create();
  api = `${platform.gatewayUrl}/api/v1`;
}, 240_000);

afterAll(async () => {
  await home?.remove();
  await platform?.stop();
});

describe('login', () => {
  it('refuses a credential the API refuses (exit 3, its message) and stores nothing', async () => {
    const refused = await home.run(['login', '--api', api, '--key', 'uk_nobody']);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('invalid or missing API key');
    await expect(stat(home.credentialsPath)).rejects.toThrow(/ENOENT/);
  });

  it('tells a command run before any login to log in (exit 3)', async () => {
    const result = await home.run(['ls', '--api', api, '--json']);
    expect(result.code).toBe(3);
    expect(envelopeOf(result).error).toMatchObject({ message: expect.stringContaining('interns login'), metadata: { reason: 'not_logged_in' } });
  });

  it('stores a key read from stdin in a 0600 file in a 0700 directory, for that API', async () => {
    const result = await home.run(['login', '--api', `${api}/`, '--json'], { input: `${KEYS.alice}\n` });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ api, kind: 'api_key', credentials_file: home.credentialsPath });
    expect((await stat(home.credentialsPath)).mode & 0o777).toBe(0o600);
    expect((await stat(home.configDir)).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(await readFile(home.credentialsPath, 'utf8'));
    expect(stored).toMatchObject({ version: 1, current: api, apis: { [api]: { kind: 'api_key', key: KEYS.alice } } });
    // Later commands use the last API logged in to without being told.
    expect((await home.json(['ls'])).data).toEqual([]);
  });

  it('logs out and in again with --key', async () => {
    expect(await home.json(['logout'])).toEqual({ api, removed: true });
    expect((await home.run(['ls', '--api', api])).code).toBe(3);
    expect((await home.run(['login', '--api', api, '--key', KEYS.alice])).code).toBe(0);
  });
});

describe('lifecycle', () => {
  it('creates, shows (by name), updates, lists, provisions, suspends and deletes, printing the API JSON', async () => {
    const created = await home.json(['create', 'cli-ada', '--description', 'first', '--model', 'local/scripted']);
    expect(created).toMatchObject({ name: 'cli-ada', description: 'first', model: 'local/scripted', status: 'stopped', instructions: null });
    expect(await home.json(['show', 'cli-ada'])).toMatchObject({ id: created.id, created_by_you: true });
    const updated = await home.json(['update', 'cli-ada', '--instructions', 'be brief', '--unset', 'description']);
    expect(updated).toMatchObject({ id: created.id, instructions: 'be brief', description: null });
    const listed = await home.json(['ls']);
    expect(listed).toEqual({ data: [expect.objectContaining({ id: created.id, name: 'cli-ada' })], has_more: false });

    expect(await home.json(['provision', 'cli-ada'])).toEqual({ provisioning: true });
    let shown = await home.json(['show', created.id]);
    for (const deadline = Date.now() + 60_000; shown.status !== 'running' && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      shown = await home.json(['show', created.id]);
    }
    expect(shown.status).toBe('running');
    expect(shown.hostname).toMatch(/^cli-ada-[0-9a-f]{8}\./);
    const busy = await home.run(['provision', 'cli-ada', '--json']);
    expect(busy.code).toBe(1);
    expect(envelopeOf(busy)).toEqual({ error: { code: 409, message: expect.any(String), metadata: { reason: 'intern_busy', retryable: false } } });

    expect(await home.json(['suspend', 'cli-ada'])).toEqual({ suspended: true });
    expect((await home.json(['show', 'cli-ada'])).status).toBe('stopped');

    // No terminal to confirm at: rm wants --yes (usage, exit 2), and nothing happens.
    const unconfirmed = await home.run(['rm', 'cli-ada']);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain('--yes');
    expect(await home.json(['rm', 'cli-ada', '--yes'])).toEqual({ deleting: true });
  }, 120_000);

  it('exits 4 for what is not there, 1 with the envelope for other refusals, 2 for bad usage', async () => {
    const byName = await home.run(['show', 'nobody-here']);
    expect(byName.code).toBe(4);
    expect(byName.stderr).toContain('no intern named "nobody-here"');
    const byId = await home.run(['show', '00000000-0000-4000-8000-000000000000', '--json']);
    expect(byId.code).toBe(4);
    expect(envelopeOf(byId)).toEqual({ error: { code: 404, message: expect.any(String), metadata: { reason: 'not_found', retryable: false } } });

    await home.json(['create', 'cli-twice']);
    const taken = await home.run(['create', 'cli-twice']);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/^error: .+ \(409 name_taken\)$/m);
    const invalid = await home.run(['create', 'Bad Name', '--json']);
    expect(invalid.code).toBe(1);
    expect(envelopeOf(invalid).error.metadata).toEqual({ reason: 'invalid_body', retryable: false });

    expect((await home.run(['update', 'cli-twice'])).code).toBe(2);
    expect((await home.run(['ls', '--status', 'sleeping'])).code).toBe(2);
    const unknownCommand = await home.run(['frobnicate', '--json']);
    expect(unknownCommand.code).toBe(2);
    expect(envelopeOf(unknownCommand).error.metadata?.reason).toBe('usage');
  });

  it('prints a compact table for people', async () => {
    const table = await home.run(['ls']);
    expect(table.code).toBe(0);
    const [header, ...rows] = table.stdout.trim().split('\n');
    expect(header).toMatch(/^ID\s+NAME\s+STATUS\s+MODEL\s+CREATED$/);
    expect(rows.some((row) => /\scli-twice\s+stopped\s/.test(row))).toBe(true);
  });
});

describe('with a running intern', () => {
  beforeAll(async () => {
    const created = await home.json(['create', 'cli-worker', '--provision', '--wait'], { timeoutMs: 90_000 });
    expect(created.status).toBe('running');
    worker = { id: created.id, name: created.name };
  }, 120_000);

  it('copies binary bytes in and out, byte for byte, and names the file after its source in a directory', async () => {
    const bytes = randomBytes(300_000);
    bytes[0] = 0;
    bytes[1] = 0xff;
    const local = join(home.dir, 'blob.bin');
    await writeFile(local, bytes);
    const uploaded = await home.json(['cp', local, `${worker.name}:in/deep/`]);
    expect(uploaded).toMatchObject({ name: 'blob.bin', type: 'file', size: bytes.length });

    const back = join(home.dir, 'back.bin');
    expect(await home.json(['cp', `${worker.name}:in/deep/blob.bin`, back])).toEqual({ path: back, size: bytes.length });
    expect((await readFile(back)).equals(bytes)).toBe(true);
    // Into a directory: the remote file's own name; to stdout with `-`.
    const intoDir = await home.run(['cp', `${worker.id}:in/deep/blob.bin`, home.dir]);
    expect(intoDir.code).toBe(0);
    expect((await readFile(join(home.dir, 'blob.bin'))).equals(bytes)).toBe(true);
    const piped = await home.run(['cp', `${worker.name}:in/deep/blob.bin`, '-']);
    expect(piped.raw.equals(bytes)).toBe(true);
    // From stdin, then a directory is not a file, and a missing file is 404 (exit 4).
    expect(await home.json(['cp', '-', `${worker.name}:note.txt`], { input: 'hello\n' })).toMatchObject({ name: 'note.txt', size: 6 });
    expect((await home.run(['cp', `${worker.name}:in`, back])).code).toBe(2);
    const missing = await home.run(['cp', `${worker.name}:nope.txt`, back, '--json']);
    expect(missing.code).toBe(4);
    expect(envelopeOf(missing).error.metadata?.reason).toBe('not_found');
  }, 60_000);

  it('sets secrets from stdin (never echoing values), lists, copies into an intern and deletes them', async () => {
    const set = await home.json(['secrets', 'set', 'github_token', '--host', 'API.github.com'], { input: 'ghp_example_value\n' });
    expect(set).toEqual({ data: { name: 'github_token', hosts: ['api.github.com'], fingerprint: expect.stringMatching(/^[0-9a-f]{64}$/), created_at: expect.any(String) } });
    const listed = await home.run(['secrets', 'ls', '--json']);
    expect(JSON.parse(listed.stdout)).toEqual({ data: [set.data], has_more: false });
    expect(listed.stdout).not.toContain('ghp_example_value');

    const copied = await home.json(['secrets', 'copy', worker.name, 'github_token']);
    expect(copied.data).toEqual([expect.objectContaining({ name: 'github_token', hosts: ['api.github.com'] })]);
    expect((await home.json(['secrets', 'ls', '--intern', worker.name])).data.map((secret: { name: string }) => secret.name)).toEqual(['github_token']);
    expect(await home.json(['secrets', 'rm', 'github_token', '--intern', worker.name])).toEqual({ deleted: 'github_token' });
    expect(await home.json(['secrets', 'rm', 'github_token'])).toEqual({ deleted: 'github_token' });
    expect((await home.run(['secrets', 'rm', 'github_token'])).code).toBe(4);
    // No value on stdin: nothing to set (exit 2); a name against the rules: the API's 400.
    expect((await home.run(['secrets', 'set', 'empty_one', '--host', 'example.com'])).code).toBe(2);
    const badName = await home.run(['secrets', 'set', 'Bad-Name', '--host', 'example.com', '--json'], { input: 'x' });
    expect(badName.code).toBe(1);
    expect(envelopeOf(badName).error.metadata?.reason).toBe('invalid_body');
  });

  it('shows and sets the egress policy, and reads its log', async () => {
    expect(await home.json(['egress', 'show', worker.name])).toEqual({ allow: [] });
    expect(await home.json(['egress', 'set', worker.name, 'pypi.org', '*.PythonHosted.org'])).toEqual({ allow: ['pypi.org', '*.pythonhosted.org'] });
    expect(await home.json(['egress', 'show', worker.name])).toEqual({ allow: ['pypi.org', '*.pythonhosted.org'] });
    expect((await home.run(['egress', 'set', worker.name])).code).toBe(2);
    expect(await home.json(['egress', 'set', worker.name, '--none'])).toEqual({ allow: [] });
    expect(await home.json(['egress', 'log', worker.name])).toEqual({ data: [], has_more: false });
    const refused = await home.run(['egress', 'set', worker.name, 'http://example.com', '--json']);
    expect(refused.code).toBe(1);
    expect(envelopeOf(refused).error.metadata?.reason).toBe('invalid_body');
  });

  it('invokes, lists the run, and replays its logs; chat without a terminal streams, and a question ends it with exit 6', async () => {
    const followed = await home.run(['invoke', worker.name, '/say followed', '--follow'], { timeoutMs: 30_000 });
    expect(followed.code).toBe(0);
    expect(followed.stdout).toMatch(/^started run [0-9a-f-]{36} \(session [^)]+\)\nfollowed\n$/);
    const invoked = await home.json(['invoke', worker.name, '/say hello from invoke']);
    expect(invoked).toEqual({ session_id: expect.any(String), status: 'started', run_id: expect.any(String) });

    const logs = await home.run(['logs', worker.name, invoked.run_id], { timeoutMs: 30_000 });
    expect(logs.code).toBe(0);
    expect(logs.stdout).toBe('hello from invoke\n');
    const chunks = (await home.run(['logs', worker.name, invoked.run_id, '--json'])).stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(chunks.at(-1)).toMatchObject({ choices: [], session_id: invoked.session_id });
    const runs = await home.json(['runs', worker.name, '--session', invoked.session_id]);
    expect(runs).toEqual({ data: [expect.objectContaining({ id: invoked.run_id, origin: 'invoke', status: 'completed', finish_reason: 'stop' })], has_more: false });

    const chatted = await home.run(['chat', worker.name, '/say hi there'], { timeoutMs: 30_000 });
    expect({ code: chatted.code, stdout: chatted.stdout }).toEqual({ code: 0, stdout: 'hi there\n' });
    const asked = await home.run(['chat', worker.name, '/shell echo never', '--approval-mode', 'manual'], { timeoutMs: 30_000 });
    expect(asked.code).toBe(6);
    expect(asked.stderr).toMatch(/asks permission for shell: echo never .*interns chat cli-worker --run [0-9a-f-]{36}/);
    const badMode = await home.run(['chat', worker.name, 'x', '--approval-mode', 'yolo']);
    expect(badMode.code).toBe(2);
  }, 90_000);
});
