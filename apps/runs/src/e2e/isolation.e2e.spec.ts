/**
 * End to end: the escape battery of CONTRACT section 15 (issue 11). Each test is an attack an intern's owner
 * could type into chat as `/shell ...`, run through the real gateway, runs service and bubblewrap sandbox,
 * with a second intern as the victim; each asserts the refusal, and where it matters checks the host too.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chmod, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Platform } from '@interns/testing';
import {
  API,
  createRunningIntern,
  eventually,
  IDENTITIES,
  KEYS,
  prompt,
  readStream,
  sessionRuns,
} from '@interns/testing/e2e';

const run = promisify(execFile);
const QUOTA_BYTES = 2 * 1024 * 1024;
let platform: Platform;
let attacker: string;
let victim: string;
/** Each intern is talked to with its owner's key (the victim lives in another workspace). */
const tokenOf = (internId: string) => (internId === victim ? KEYS.aliceOther : KEYS.alice);

/** What `/shell <command>` streams back from `internId`, with the run's finish reason. */
async function shell(internId: string, command: string): Promise<{ content: string; finishReason: string }> {
  const summary = await readStream(await prompt(platform, internId, `/shell ${command}`, { token: tokenOf(internId) }), 30_000);
  return { content: summary.content, finishReason: summary.finishReason };
}

async function output(internId: string, command: string): Promise<string> {
  const { content, finishReason } = await shell(internId, command);
  expect(finishReason).toBe('stop');
  return content;
}

const workspaceOf = (internId: string) => join(platform.env.DATA_DIR, 'workspaces', internId);

/** Live (not zombie) host processes of `uid`, as `ps` lines. */
function processesOf(uid: number): string[] {
  let listing: string;
  try {
    listing = execFileSync('ps', ['-u', String(uid), '-o', 'pid=,stat=,args='], { encoding: 'utf8' });
  } catch {
    listing = ''; // ps exits 1 when nothing matches
  }
  return listing.split('\n').filter((line) => line.trim() !== '' && !/^\s*\d+\s+Z/.test(line));
}

async function expectAllReady(): Promise<void> {
  for (const service of ['gateway', 'lifecycle', 'runs', 'analytics'] as const) {
    const response = await fetch(`${platform.process(service).url}/health/ready`);
    expect({ service, status: response.status }).toEqual({ service, status: 200 });
  }
}

beforeAll(async () => {
  platform = await Platform.start({
    env: {
      CHAT_TURNS_PER_MINUTE: '1000',
      SHELL_TIMEOUT_MS: '5000',
      SHELL_MAX_PROCESSES: '32',
      WORKSPACE_QUOTA_BYTES: String(QUOTA_BYTES),
    },
  });
  await platform.applyIdentities(IDENTITIES);
  // The victim belongs to another workspace of another member; the attacker is an ordinary intern.
  [attacker, victim] = await Promise.all([createRunningIntern(platform, KEYS.alice), createRunningIntern(platform, KEYS.aliceOther)]);
  await output(victim, 'echo "victim secret" > secret.txt');
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

it('runs as an unprivileged uid of its own, distinct per intern, which owns its files on the host', async () => {
  const attackerUid = Number(await output(attacker, 'id -u'));
  const victimUid = Number(await output(victim, 'id -u'));
  expect(attackerUid).toBeGreaterThan(0);
  expect(victimUid).toBeGreaterThan(0);
  expect(attackerUid).not.toBe(victimUid);
  expect((await stat(join(workspaceOf(victim), 'secret.txt'))).uid).toBe(victimUid);
  expect(await output(attacker, 'grep -E "^(CapEff|NoNewPrivs)" /proc/self/status')).toBe('CapEff:\t0000000000000000\nNoNewPrivs:\t1\n');
});

it("reads no host process's environment: the issue's own attack prints nothing", async () => {
  const attack = 'for p in $(pgrep node); do tr "\\0" "\\n" < /proc/$p/environ | grep DATABASE_URL; done; echo "found=$(cat /proc/[0-9]*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c -e DATABASE_URL -e MODEL_API_KEY)"';
  expect(await output(attacker, attack)).toBe('found=0\n');
});

it('sees only its own processes in /proc', async () => {
  const listing = await output(attacker, 'ps -e -o pid=,comm=');
  const names = listing.trim().split('\n').map((line) => line.trim().split(/\s+/)[1]);
  expect(names).not.toContain('node');
  expect(names.length).toBeLessThanOrEqual(4);
  // The service's PID is nothing inside: signals cannot reach it.
  const runsPid = platform.process('runs').pid;
  expect(await output(attacker, `kill -9 ${runsPid} 2>&1; kill -9 $PPID 2>&1; echo done`)).toMatch(/done\n$/);
  await expectAllReady();
});

it('sees no DATA_DIR, no checkout, no other workspace and no key file', async () => {
  const dataDir = platform.env.DATA_DIR;
  const checkout = resolve('.');
  const victimSecret = join(workspaceOf(victim), 'secret.txt');
  const byHostPath = await output(attacker, `ls ${dataDir} 2>&1; cat ${victimSecret} 2>&1; ls ${checkout}/package.json 2>&1`);
  expect(byHostPath).toBe(
    [
      `ls: cannot access '${dataDir}': No such file or directory`,
      `cat: ${victimSecret}: No such file or directory`,
      `ls: cannot access '${checkout}/package.json': No such file or directory`,
      '[exit code 2]',
    ].join('\n'),
  );
  // The whole visible tree: the system's read-only directories, its own workspace, and the egress proxy's socket.
  expect(await output(attacker, 'ls -a .. | tr "\\n" " "')).toBe('. .. bin dev etc lib lib64 proc run sbin tmp usr workspace ');
  expect(await output(attacker, 'find /run | sort')).toBe('/run\n/run/egress\n/run/egress/proxy.sock\n');
  // /usr is the host's public, read-only OS tree (CA bundles, libraries); everything else is searched.
  const search = [
    'grep -rl "victim secret" / --exclude-dir=proc --exclude-dir=usr 2>/dev/null',
    "find / \\( -path /proc -o -path /usr \\) -prune -o \\( -name '*.pem' -o -name '*jwk*' -o -name 'daemon-signing' -o -name 'dev-oidc' -o -name '*.creds' \\) -print 2>/dev/null",
    'echo searched',
  ].join('; ');
  expect(await output(attacker, search)).toBe('searched\n');
  // The keys exist on the host all the while, where no sandbox reaches.
  expect(execFileSync('find', [dataDir, '-name', '*.pem'], { encoding: 'utf8' })).toMatch(/\.pem/);
});

it('reaches neither PostgreSQL, NATS nor the gateway over the network', async () => {
  const gatewayPort = new URL(platform.gatewayUrl).port;
  const ports = [5432, 4222, gatewayPort];
  const probe = `bash -c 'for port in ${ports.join(' ')}; do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && echo "open $port" || echo "closed $port"; done'`;
  expect(await output(attacker, probe)).toBe(ports.map((port) => `closed ${port}\n`).join(''));
  // The same probe from the host finds them open, so the refusal is the sandbox's.
  const { stdout } = await run('bash', ['-c', probe.slice("bash -c '".length, -1)]);
  expect(stdout).toBe(ports.map((port) => `open ${port}\n`).join(''));
});

it('writes nothing outside its workspace and /tmp', async () => {
  // One stream for all of it: the shell reports a failed redirection on its own stderr, which would otherwise
  // reach the output in any order with stdout.
  const seen = await output(attacker, '{ touch /usr/x; touch /etc/x; touch /x; echo x > /dev/x; echo ok > /tmp/t && cat /tmp/t; } 2>&1');
  expect(seen).toContain("touch: cannot touch '/usr/x': Read-only file system");
  expect(seen).toContain("touch: cannot touch '/etc/x': Read-only file system");
  expect(seen).toContain("touch: cannot touch '/x': Read-only file system");
  expect(seen).toMatch(/\/dev\/x: Read-only file system/);
  expect(seen).toMatch(/ok\n$/);
});

it('leaves no setsid or background survivor once the run is over (checked on the host)', async () => {
  const uid = Number(await output(attacker, 'id -u'));
  await output(attacker, 'setsid sh -c "sleep 300" >/dev/null 2>&1 & nohup sleep 300 >/dev/null 2>&1 & echo started');
  await eventually(async () => processesOf(uid), (alive) => alive.length === 0, 5000);
});

it('bounds a fork bomb, and every service stays ready', async () => {
  const bomb = await shell(attacker, 'bomb() { bomb | bomb & }; bomb; sleep 2; echo after');
  expect(bomb.finishReason).toBe('stop');
  const uid = Number(await output(attacker, 'id -u'));
  await eventually(async () => processesOf(uid), (alive) => alive.length === 0, 5000);
  await expectAllReady();
  expect(await output(attacker, 'echo still here')).toBe('still here\n');
});

it('enforces the workspace quota inside the sandbox and says so', async () => {
  const seen = await output(attacker, 'dd if=/dev/zero of=big bs=64k count=64 2>&1 | head -1; ls -l big | cut -d" " -f5');
  // The workspace is a filesystem of its own (WORKSPACE_DISK=image): it is full, not the file too large.
  expect(seen).toMatch(/No space left on device/);
  expect(seen).toMatch(/\[workspace quota reached: \d+ of 2097152 bytes used; writing past it fails\]/);
  expect((await stat(join(workspaceOf(attacker), 'big'))).size).toBeLessThanOrEqual(QUOTA_BYTES);
  await output(attacker, 'rm big');
});

it('keeps the workspace, and its owner, across runs and across suspend and provision', async () => {
  const uid = Number(await output(attacker, 'id -u'));
  await output(attacker, 'echo kept > kept.txt');
  expect(await output(attacker, 'cat kept.txt')).toBe('kept\n');

  const suspended = await platform.api(`${API}/interns/${attacker}/suspend`, { token: KEYS.alice, method: 'POST' });
  expect(suspended.status).toBe(200);
  const provisioned = await platform.api(`${API}/interns/${attacker}/provision`, { token: KEYS.alice, method: 'POST' });
  expect(provisioned.status).toBe(202);
  await eventually(
    async () => (await platform.api(`${API}/interns/${attacker}`, { token: KEYS.alice })).body as { status: string },
    (intern) => intern.status === 'running',
    20_000,
  );
  expect(await output(attacker, 'cat kept.txt; id -u')).toBe(`kept\n${uid}\n`);
  expect(await readFile(join(workspaceOf(attacker), 'kept.txt'), 'utf8')).toBe('kept\n');
});

it('reaches its workspace below a DATA_DIR other users cannot search (a clone in /root), still as its own uid', async () => {
  // bwrap runs as the intern's uid and resolves the workspace by path; the launch binds it somewhere reachable
  // in the command's own mount namespace. (Failing closed when no sandbox can be built: bubblewrap-shell.int.spec.)
  const uid = Number(await output(attacker, 'id -u'));
  await chmod(platform.env.DATA_DIR, 0o700);
  try {
    expect(await output(attacker, 'touch reached && id -u && pwd')).toBe(`${uid}\n/workspace\n`);
  } finally {
    await chmod(platform.env.DATA_DIR, 0o711);
  }
  expect((await stat(join(workspaceOf(attacker), 'reached'))).uid).toBe(uid);
});

it('ends a going command, with everything it started, when the intern is suspended or deleted', async () => {
  const uid = Number(await output(victim, 'id -u'));
  for (const action of ['suspend', 'delete'] as const) {
    const invoked = await platform.api(`${API}/interns/${victim}/invoke`, {
      token: KEYS.aliceOther,
      json: { input: '/shell setsid sh -c "sleep 300" & sleep 300' },
    });
    expect(invoked.status).toBe(202);
    await eventually(async () => processesOf(uid), (alive) => alive.some((line) => line.includes('sleep 300')), 10_000);
    const ended =
      action === 'suspend'
        ? await platform.api(`${API}/interns/${victim}/suspend`, { token: KEYS.aliceOther, method: 'POST' })
        : await platform.api(`${API}/interns/${victim}`, { token: KEYS.aliceOther, method: 'DELETE' });
    expect(ended.status).toBe(action === 'suspend' ? 200 : 202);
    await eventually(async () => processesOf(uid), (alive) => alive.length === 0, 10_000);
    const sessionId = (invoked.body as { session_id: string }).session_id;
    await eventually(
      () => sessionRuns(platform, sessionId),
      (runs) => runs.length === 1 && runs[0].status === 'cancelled',
      5000,
    );
    if (action === 'suspend') {
      await platform.api(`${API}/interns/${victim}/provision`, { token: KEYS.aliceOther, method: 'POST' });
      await eventually(
        async () => (await platform.api(`${API}/interns/${victim}`, { token: KEYS.aliceOther })).body as { status: string },
        (intern) => intern.status === 'running',
        20_000,
      );
    }
  }
});

it('refuses RUNTIME_SANDBOX=off with NODE_ENV=production at start', async () => {
  const env: NodeJS.ProcessEnv = { ...process.env, ...platform.env, RUNS_PORT: '0', RUNTIME_SANDBOX: 'off', NODE_ENV: 'production' };
  delete env.NODE_OPTIONS;
  const started = await run(process.execPath, [resolve('dist/apps/runs/src/main.js')], { env, timeout: 30_000 }).then(
    () => ({ code: 0, output: '' }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code, output: `${error.stdout}${error.stderr}` }),
  );
  expect(started.code).toBe(1);
  expect(started.output).toContain('RUNTIME_SANDBOX=off is for development only and is refused with NODE_ENV=production');
});
