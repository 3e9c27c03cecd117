/**
 * End to end, at a pseudo-terminal: `interns chat` asking a permission (manual approval of `/shell`) and a question
 * (the scripted model's `/ask`) and answering them, a conversation resumed with `--run`, and `attach` running a
 * command in the intern's shell with the window's size. The door's origin is the test gateway's own port on a
 * `*.localhost` name, so `attach` reaches it on loopback with the intern's Host, as it does under `npm start`.
 */
import type { Platform } from '@interns/testing';
import { readFile } from 'node:fs/promises';
import { CliHome, KEYS, PtyRun, startPlatform, WORKSPACE } from './cli.fixture';

let platform: Platform;
let home: CliHome;
let intern: { id: string; name: string };

beforeAll(async () => {
  // Lifecycle answers daemon access with INTERN_ORIGIN: it starts once the gateway's port is known.
  platform = await startPlatform({
    beforeServices: (started) => {
      started.env.INTERN_ORIGIN = `http://{hostname}:${new URL(started.gatewayUrl).port}`;
    },
  });
  const { access_token: token } = await platform.admin<{ access_token: string }>(
    'oauth-token', '--member', 'alice', '--workspace', WORKSPACE, '--scope', 'interns vault:read',
  );
  home = await CliHome.create();
  const login = await home.run(['login', '--api', `${platform.gatewayUrl}/api/v1`, '--token', token]);
  if (login.code !== 0) throw new Error(`login failed: ${login.stderr}`);
  const created = await home.json(['create', 'cli-pty', '--provision', '--wait'], { timeoutMs: 90_000 });
  intern = { id: created.id, name: created.name };
}, 300_000);

afterAll(async () => {
  await home?.remove();
  await platform?.stop();
});

it('asks a manual permission at the terminal, runs the command once allowed, and exits 0', async () => {
  const chat = await PtyRun.start(home, ['chat', intern.name, '/shell echo from-the-$((40+2))-shell', '--approval-mode', 'manual']);
  await chat.until('The intern asks permission: shell: echo from-the-$((40+2))-shell');
  await chat.until('allow once');
  chat.type('\r'); // the first option: allow once
  const answered = await chat.until('from-the-42-shell');
  expect(answered).toBeGreaterThan(0);
  expect((await chat.exit()).exitCode).toBe(0);
}, 60_000);

it('answers a rejection: the command does not run', async () => {
  const chat = await PtyRun.start(home, ['chat', intern.name, '/shell echo ran-$((1+1))', '--approval-mode', 'manual']);
  await chat.until('allow once');
  chat.type('\x1b[B\x1b[B\r'); // down twice: reject once
  const answeredAt = await chat.until('reject once');
  expect((await chat.exit()).exitCode).toBe(0);
  expect(chat.text().slice(answeredAt)).not.toContain('ran-2');
}, 60_000);

it("asks the model's question with its field, sends the answer typed, and streams on", async () => {
  const chat = await PtyRun.start(home, ['chat', intern.name, '/ask What is your name?\n/say Thanks']);
  await chat.until('The intern asks: What is your name?');
  await chat.until('answer');
  chat.type('Ada Lovelace\r');
  // The scripted model streams the answer it got (the accept, as the CLI sent it), then goes on.
  await chat.until(/\{"action":"accept","content":\{"answer":"Ada Lovelace"\}\}\r?\nThanks/);
  expect((await chat.exit()).exitCode).toBe(0);
}, 60_000);

it('resumes a paused run with --run, answers it, then goes on as a conversation until .exit', async () => {
  const paused = await home.run(['chat', intern.name, '/say before\n/shell echo resumed-$((2*3))', '--approval-mode', 'manual']);
  expect(paused.code).toBe(6);
  const runId = /--run ([0-9a-f-]{36})/.exec(paused.stderr)?.[1] ?? '';
  expect(runId).not.toBe('');

  const chat = await PtyRun.start(home, ['chat', intern.name, '--run', runId]);
  await chat.until('before');
  await chat.until('allow once');
  chat.type('\r');
  await chat.until('resumed-6');
  // Then a conversation in the run's session, a line a prompt.
  await chat.until('you');
  chat.type('/say second turn\r');
  await chat.until('second turn', { from: chat.text().lastIndexOf('/say second turn') + '/say second turn'.length });
  chat.type('.exit\r');
  expect((await chat.exit()).exitCode).toBe(0);
  const runs = await home.json(['runs', intern.name]);
  expect(runs.data.find((run: { id: string }) => run.id === runId)).toMatchObject({ status: 'completed', finish_reason: 'stop' });
}, 90_000);

it("attaches to the intern's shell: runs id -u at the window's size, follows a resize, and exits with the shell", async () => {
  const attach = await PtyRun.start(home, ['attach', intern.name], { cols: 91, rows: 27 });
  await attach.until('attached to cli-pty');
  attach.type('echo "uid=$(id -u) size=$(stty size)"\r');
  const at = await attach.until(/uid=\d+ size=27 91/);
  const uid = Number(/uid=(\d+)/.exec(attach.text().slice(at))?.[1]);
  expect(uid).toBeGreaterThan(0);
  expect(uid).not.toBe(process.getuid?.());
  attach.resize(120, 40);
  await new Promise((resolve) => setTimeout(resolve, 300));
  attach.type('echo "now=$(stty size)"\r');
  await attach.until('now=40 120');
  attach.type('exit\r');
  expect((await attach.exit()).exitCode).toBe(0);
  expect(attach.text()).toContain('detached');
}, 60_000);

it('refuses attach with an API key: the message and exit 3', async () => {
  const keyHome = await CliHome.create();
  try {
    expect((await keyHome.run(['login', '--api', `${platform.gatewayUrl}/api/v1`, '--key', 'uk_cli_alice'])).code).toBe(0);
    const refused = await keyHome.run(['attach', intern.id]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/error: .+ \(403 personal_identity_required\)\nhint: this needs a personal OAuth token/);
  } finally {
    await keyHome.remove();
  }
}, 30_000);

it("asks at the terminal, never echoing secrets: login's key, rm's confirmation, a vault value typed twice", async () => {
  const promptHome = await CliHome.create();
  try {
    const login = await PtyRun.start(promptHome, ['login', '--api', `${platform.gatewayUrl}/api/v1`]);
    await login.until('API key or OAuth token');
    login.type(`${KEYS.bob}\r`);
    await login.until('logged in to');
    expect((await login.exit()).exitCode).toBe(0);
    expect(login.text()).not.toContain(KEYS.bob);
    expect(JSON.parse(await readFile(promptHome.credentialsPath, 'utf8')).apis[`${platform.gatewayUrl}/api/v1`]).toMatchObject({ kind: 'api_key', key: KEYS.bob });

    const secret = await PtyRun.start(promptHome, ['secrets', 'set', 'typed_token', '--host', 'api.example.com']);
    await secret.until('value of typed_token');
    secret.type('s3cret-typed\r');
    await secret.until('again, to confirm');
    secret.type('s3cret-typed\r');
    await secret.until('set typed_token for api.example.com');
    expect((await secret.exit()).exitCode).toBe(0);
    expect(secret.text()).not.toContain('s3cret-typed');

    const created = await promptHome.json(['create', 'cli-doomed']);
    const declined = await PtyRun.start(promptHome, ['rm', 'cli-doomed']);
    await declined.until(`delete cli-doomed (${created.id})?`);
    declined.type('n\r');
    expect((await declined.exit()).exitCode).toBe(1);
    expect((await promptHome.json(['show', created.id])).status).toBe('stopped');
    const confirmed = await PtyRun.start(promptHome, ['rm', 'cli-doomed']);
    await confirmed.until('delete cli-doomed');
    confirmed.type('y\r');
    await confirmed.until('deleting cli-doomed');
    expect((await confirmed.exit()).exitCode).toBe(0);
  } finally {
    await promptHome.remove();
  }
}, 90_000);
