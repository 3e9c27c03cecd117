/**
 * End to end: resources of its own (CONTRACT section 22, issue 23). Each attack is what an intern's owner could type
 * into chat as `/shell ...`, through the real gateway, runs service and sandbox, with a victim intern of another
 * workspace beside the attacker; each asserts the refusal, that every service stays ready and that the victim's
 * next command works. Then the tenant caps, answered over HTTP.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Platform, syscallProbe } from '@interns/testing';
import {
  API,
  createIntern,
  createRunningIntern,
  eventually,
  IDENTITIES,
  KEYS,
  prompt,
  readStream,
} from '@interns/testing/e2e';

const INTERN_MEMORY_BYTES = 96 * 1024 * 1024;
const MAX_INTERNS_PER_WORKSPACE = 4;
const ANALYTICS_QUERIES_PER_MINUTE = 2;
const WORKSPACE_QUOTA_BYTES = 24 * 1024 * 1024;
const WORKSPACE_QUOTA_INODES = 400;

let platform: Platform;
let attacker: string;
let victim: string;
/** The attacker lives in WS_MAIN (alice's key), the victim in WS_OTHER (alice's other key). */
const tokenOf = (internId: string) => (internId === victim ? KEYS.aliceOther : KEYS.alice);

async function output(internId: string, command: string, token = tokenOf(internId)): Promise<string> {
  const summary = await readStream(await prompt(platform, internId, `/shell ${command}`, { token }), 40_000);
  expect(summary.finishReason).toBe('stop');
  return summary.content;
}

async function expectUnharmed(): Promise<void> {
  for (const service of ['gateway', 'lifecycle', 'runs', 'analytics', 'webhooks'] as const) {
    const response = await fetch(`${platform.process(service).url}/health/ready`);
    expect({ service, status: response.status }).toEqual({ service, status: 200 });
  }
  expect(await output(victim, 'echo victim fine')).toBe('victim fine\n');
}

beforeAll(async () => {
  platform = await Platform.start({
    env: {
      CHAT_TURNS_PER_MINUTE: '1000',
      SHELL_TIMEOUT_MS: '20000',
      INTERN_MEMORY_BYTES: String(INTERN_MEMORY_BYTES),
      // Larger than the intern's memory: what stops a full /tmp is the memory limit, not the tmpfs size.
      SHELL_TMP_BYTES: String(256 * 1024 * 1024),
      WORKSPACE_QUOTA_BYTES: String(WORKSPACE_QUOTA_BYTES),
      WORKSPACE_QUOTA_INODES: String(WORKSPACE_QUOTA_INODES),
      MAX_INTERNS_PER_WORKSPACE: String(MAX_INTERNS_PER_WORKSPACE),
      ANALYTICS_QUERIES_PER_MINUTE: String(ANALYTICS_QUERIES_PER_MINUTE),
      PROVISION_CONCURRENCY_PER_WORKSPACE: '1',
    },
  });
  await platform.applyIdentities(IDENTITIES);
  [attacker, victim] = await Promise.all([createRunningIntern(platform, KEYS.alice, 60_000), createRunningIntern(platform, KEYS.aliceOther, 60_000)]);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

describe("an intern's memory (INTERN_MEMORY_BYTES), counted across its processes and its /tmp", () => {
  it('three processes that each fit do not fit together: the kernel kills within the intern, and says so', async () => {
    const each = "python3 -c \"import time; b = b'x' * (45 * 1024 * 1024); time.sleep(2); print('kept')\"";
    const answer = await output(attacker, `${each} & ${each} & ${each} & wait`);
    expect(answer.match(/kept/g)?.length ?? 0).toBeLessThan(3);
    expect(answer).toContain('[memory limit reached]');
    await expectUnharmed();
  });

  it('filling /tmp past it kills the writer, not a service', async () => {
    const answer = await output(attacker, 'dd if=/dev/zero of=/tmp/fill bs=1M count=200 2>&1 | tail -1');
    expect(answer).toContain('[memory limit reached]');
    await expectUnharmed();
    expect(await output(attacker, 'echo attacker fine')).toBe('attacker fine\n');
  });
});

it('refuses each filtered syscall (keyrings, ptrace, bpf, perf, userfaultfd, io_uring, personality, mounts, namespaces, TIOCSTI)', async () => {
  const probe = syscallProbe();
  expect((await output(attacker, probe.command)).trim().split('\n')).toEqual(probe.expected);
  await expectUnharmed();
});

describe('the workspace quota (WORKSPACE_QUOTA_BYTES, WORKSPACE_QUOTA_INODES), for the whole workspace', () => {
  it('stops files that each fit from filling more than the quota together', async () => {
    // Five files of 8 MiB each against 24 MiB: each one alone fits.
    const answer = await output(attacker, 'for n in 1 2 3 4 5; do dd if=/dev/zero of=big$n bs=1M count=8 2>&1 | grep -o "No space left on device"; done; du -s -B1 . | cut -f1');
    expect(answer).toContain('No space left on device');
    expect(answer).toContain(`bytes used; writing past it fails]`);
    const used = Number(answer.split('\n').find((line) => /^\d+$/.test(line)));
    expect(used).toBeGreaterThan(16 * 1024 * 1024);
    expect(used).toBeLessThanOrEqual(WORKSPACE_QUOTA_BYTES);
    // The next command still cannot grow the workspace.
    expect(await output(attacker, 'dd if=/dev/zero of=more bs=1M count=1 2>&1 | grep -o "No space left on device"')).toMatch(/^No space left on device\n/);
    await expectUnharmed();
    expect(await output(attacker, 'rm -f big* more && echo freed')).toBe('freed\n');
  });

  it('stops a command creating files past the inode cap', async () => {
    const answer = await output(attacker, 'mkdir many && cd many && for n in $(seq 1 1000); do touch f$n 2>/dev/null || { echo "refused at $n"; break; }; done');
    expect(Number(/refused at (\d+)/.exec(answer)?.[1])).toBeLessThanOrEqual(WORKSPACE_QUOTA_INODES);
    expect(answer).toContain(`[workspace quota reached: it holds the most files and directories it may (${WORKSPACE_QUOTA_INODES}); creating more fails]`);
    await expectUnharmed();
    expect(await output(attacker, 'rm -rf many && echo freed')).toBe('freed\n');
  });
});

it('holds no descriptor of the service beyond stdio', async () => {
  // ls itself holds one more: the directory it reads.
  expect(await output(attacker, 'ls /proc/self/fd')).toBe('0\n1\n2\n3\n');
});

it('tears down an intern that left a FIFO, a unix socket and a full workspace, while another workspace provisions', async () => {
  const doomed = await createRunningIntern(platform, KEYS.alice, 60_000);
  await output(doomed, `mkfifo pipe && python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('socket')" && echo made`);
  expect(await output(doomed, 'dd if=/dev/urandom of=fill bs=1M count=64 2>&1 | grep -o "No space left on device"')).toContain('No space left on device');
  const deleted = await platform.api(`${API}/interns/${doomed}`, { method: 'DELETE', token: KEYS.alice });
  expect(deleted.status).toBe(202);
  const neighbour = await createRunningIntern(platform, KEYS.aliceOther, 60_000);
  await eventually(
    () => platform.api(`${API}/interns/${doomed}`, { token: KEYS.alice }),
    (got) => got.status === 404,
    60_000,
  );
  const archives = await readdir(join(platform.env.DATA_DIR, 'archives'));
  expect(archives.filter((name) => name.startsWith(doomed) && name.endsWith('.tar.gz'))).toHaveLength(1);
  // Its disk is gone with it: the image and the mount.
  expect((await readdir(join(platform.env.DATA_DIR, 'disks'))).filter((name) => name.startsWith(doomed))).toEqual([]);
  expect(await readFile('/proc/self/mountinfo', 'utf8')).not.toContain(doomed);
  expect(await output(neighbour, 'echo neighbour fine', KEYS.aliceOther)).toBe('neighbour fine\n');
  await platform.api(`${API}/interns/${neighbour}`, { method: 'DELETE', token: KEYS.aliceOther });
});

describe('tenant caps', () => {
  it(`creates at most MAX_INTERNS_PER_WORKSPACE (${MAX_INTERNS_PER_WORKSPACE}) interns in a workspace: 409 limit_reached`, async () => {
    const listed = await platform.api(`${API}/interns`, { token: KEYS.alice });
    const room = MAX_INTERNS_PER_WORKSPACE - listed.body.data.length;
    const made = await Promise.all(Array.from({ length: room }, () => createIntern(platform, KEYS.alice)));
    const refused = await platform.api(`${API}/interns`, { token: KEYS.alice, json: { name: 'one-too-many' } });
    expect(refused.status).toBe(409);
    expect(refused.body).toEqual({
      error: {
        code: 409,
        message: `this workspace already holds ${MAX_INTERNS_PER_WORKSPACE} interns (MAX_INTERNS_PER_WORKSPACE); delete one first`,
        metadata: { reason: 'limit_reached', retryable: false },
      },
    });
    // Another workspace keeps its own room.
    expect((await platform.api(`${API}/interns`, { token: KEYS.aliceOther, json: { name: 'elsewhere' } })).status).toBe(201);
    await Promise.all(made.map((id) => platform.api(`${API}/interns/${id}`, { method: 'DELETE', token: KEYS.alice })));
  });

  it(`answers ANALYTICS_QUERIES_PER_MINUTE (${ANALYTICS_QUERIES_PER_MINUTE}) analytics queries a minute per organization, then 429`, async () => {
    const query = () => platform.api(`${API}/analytics/query`, { token: KEYS.management, json: { metrics: ['run_count'] } });
    expect([(await query()).status, (await query()).status]).toEqual([200, 200]);
    const limited = await query();
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited.body).toEqual({
      error: { code: 429, message: `this organization's analytics queries are limited to ${ANALYTICS_QUERIES_PER_MINUTE} a minute (ANALYTICS_QUERIES_PER_MINUTE)` },
    });
  });
});
