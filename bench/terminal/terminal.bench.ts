import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Platform } from '@interns/testing';
import { benchIdentities, BENCH_MEMBER_ID, log, percentile, provisionScriptedIntern, runBenchmark, sleep, throwIfInterrupted } from '../shared/bench-kit';
import { EchoLine } from './echo-line';
import { type Door, doorTerminal, localTerminal } from './terminal-streams';

/**
 * `npm run bench:terminal`: keystroke echo through the door (a WebSocket to the gateway's `GET /api/terminal`,
 * NATS to runs, the intern's sandboxed pty, and back) against a pty of the bench's own process. On both ends the
 * shell is made a raw `cat`, so each byte typed comes back once; one keystroke at a time, the next after its echo,
 * in rounds that alternate between the two. Prints p50/p99 of each and what the door adds; exits 0 whatever the
 * figures are, 1 only when the benchmark itself breaks.
 */

const USER_KEY = 'uk_bench_terminal';
const WORKSPACE_ID = '5eed0000-0000-4000-8000-000000000025';
const IDENTITIES = benchIdentities({ workspaceId: WORKSPACE_ID, userKey: USER_KEY });
const RUNNING_TIMEOUT_MS = 60_000;
const WARM_UP_KEYSTROKES = 100;
const ROUNDS = 6;
const KEYSTROKES_PER_ROUND = 150;
/** A pause between keystrokes, as a typist leaves: each echo is a key's own, not a queue's. */
const KEYSTROKE_GAP_MS = 10;
const AIM_ADDED_P50_MS = 5;
const LETTERS = 'abcdefghijklmnopqrstuvwxyz';

/** The door of a running intern: its hostname and the daemon token an OAuth token reveals. */
async function doorOf(platform: Platform, internId: string): Promise<Door> {
  const issued = await platform.admin<{ access_token: string }>('oauth-token', '--member', BENCH_MEMBER_ID, '--workspace', WORKSPACE_ID, '--scope', 'interns vault:read');
  const revealed = await platform.api<{ token: string }>(`/api/v1/interns/${internId}/daemon`, { token: issued.access_token });
  if (revealed.status !== 200) throw new Error(`daemon access answered ${revealed.status}: ${revealed.text}`);
  const intern = await platform.api<{ hostname: string }>(`/api/v1/interns/${internId}`, { token: USER_KEY });
  return { gatewayWsUrl: platform.gatewayUrl.replace('http', 'ws'), hostname: intern.body.hostname, daemonToken: revealed.body.token };
}

/** `count` keystrokes on `line`, one after the other's echo; their round trips in ms. */
async function type(line: EchoLine, count: number): Promise<number[]> {
  const trips: number[] = [];
  for (let i = 0; i < count; i += 1) {
    throwIfInterrupted();
    trips.push(await line.keystroke(LETTERS[i % LETTERS.length] as string));
    await sleep(KEYSTROKE_GAP_MS);
  }
  return trips;
}

const ms = (value: number) => value.toFixed(2).padStart(8);

function report(door: number[], local: number[], perRound: { door: number; local: number }[], unexpected: { door: number; local: number }): void {
  const added = { p50: percentile(door, 50) - percentile(local, 50), p99: percentile(door, 99) - percentile(local, 99) };
  log();
  log(`${door.length} keystrokes each, ${ROUNDS} interleaved rounds, ${KEYSTROKE_GAP_MS} ms between keystrokes`);
  log();
  log(`${'target'.padEnd(20)}  p50 ms    p99 ms    max ms`);
  log(`${'door'.padEnd(20)}${ms(percentile(door, 50))}  ${ms(percentile(door, 99))}  ${ms(Math.max(...door))}`);
  log(`${'local pty'.padEnd(20)}${ms(percentile(local, 50))}  ${ms(percentile(local, 99))}  ${ms(Math.max(...local))}`);
  log(`${'added (door - local)'.padEnd(20)}${ms(added.p50)}  ${ms(added.p99)}`);
  log();
  log(`per round p50 ms (door / local): ${perRound.map((round) => `${round.door.toFixed(2)} / ${round.local.toFixed(2)}`).join(', ')}`);
  log(`bytes other than the echo awaited: door ${unexpected.door}, local ${unexpected.local}`);
  log();
  log(`added p50: ${added.p50.toFixed(2)} ms  aim <= ${AIM_ADDED_P50_MS} ms  ${added.p50 <= AIM_ADDED_P50_MS ? 'PASS' : 'MISS'}`);
}

async function benchmark(): Promise<void> {
  const startedAt = Date.now();
  log('starting the platform...');
  const platform = await Platform.start();
  const localDir = await mkdtemp(join(tmpdir(), 'bench-terminal-'));
  const lines: EchoLine[] = [];
  try {
    await platform.applyIdentities(IDENTITIES);
    log('provisioning an intern...');
    const internId = await provisionScriptedIntern(platform, USER_KEY, 'bench-terminal', { description: 'terminal benchmark', timeoutMs: RUNNING_TIMEOUT_MS, pollMs: 100 });
    log('attaching a terminal at the door and a local pty...');
    const door = await EchoLine.open('door', await doorTerminal(await doorOf(platform, internId)));
    lines.push(door);
    const local = await EchoLine.open('local pty', localTerminal(localDir));
    lines.push(local);

    log(`warming up (${WARM_UP_KEYSTROKES} keystrokes each)...`);
    await type(door, WARM_UP_KEYSTROKES);
    await type(local, WARM_UP_KEYSTROKES);
    door.unexpectedBytes = 0;
    local.unexpectedBytes = 0;

    log(`measuring (${ROUNDS} rounds of ${KEYSTROKES_PER_ROUND} keystrokes each)...`);
    const trips = { door: [] as number[], local: [] as number[] };
    const perRound: { door: number; local: number }[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      // Each round starts with the other target, so neither always types after the other.
      const order = round % 2 === 0 ? (['door', 'local'] as const) : (['local', 'door'] as const);
      const figures = { door: 0, local: 0 };
      for (const name of order) {
        const roundTrips = await type(name === 'door' ? door : local, KEYSTROKES_PER_ROUND);
        trips[name].push(...roundTrips);
        figures[name] = percentile(roundTrips, 50);
      }
      perRound.push(figures);
    }
    report(trips.door, trips.local, perRound, { door: door.unexpectedBytes, local: local.unexpectedBytes });
    log(`whole benchmark ${Math.round((Date.now() - startedAt) / 1000)} s`);
  } finally {
    for (const line of lines) await line.close().catch(() => undefined);
    await rm(localDir, { recursive: true, force: true });
    await platform.stop();
  }
}

runBenchmark('terminal', benchmark);
