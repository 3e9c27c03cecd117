import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Platform } from '@interns/testing';
import { benchIdentities, log, median, provisionScriptedIntern, runBenchmark, sum, throwIfInterrupted } from '../shared/bench-kit';
import { measureCpu } from '../shared/process-cpu';
import type { RemoteFile, Transfer } from './transfer-client';
import { startMover } from './transfer-process';

/**
 * `npm run bench:files`: a 100 MiB file up to an intern's workspace (`PUT /api/v1/interns/{id}/files/{path}`:
 * gateway, straight to runs over HTTP as `npm start` moves it (FILE_TRANSFER_PORT; with 0, NATS in chunks), written
 * as the intern's user in its sandbox) and down again (`GET`), against a copy of the same file on the same disk, in
 * interleaved rounds, each move in a node process of its own (transfer-process.ts). Prints each one's throughput and
 * the ratios;
 * exits 0 whatever the figures are, 1 only when the benchmark itself breaks (a refusal, wrong bytes).
 */

const USER_KEY = 'uk_bench_files';
const IDENTITIES = benchIdentities({ workspaceId: '5eed0000-0000-4000-8000-000000000021', userKey: USER_KEY });
const MIB = 1024 * 1024;
/** FILE_UPLOAD_MAX_BYTES' default: the largest upload the interface promises. */
const FILE_BYTES = 100 * MIB;
const PLATFORM_ENV: Record<string, string> = {
  FILE_UPLOAD_MAX_BYTES: String(FILE_BYTES),
  // Room for the file, its replacement's temporary file beside it, and the image's own overhead.
  WORKSPACE_QUOTA_BYTES: String(512 * MIB),
};
const RUNNING_TIMEOUT_MS = 60_000;
const ROUNDS = 3;
const AIM_RATIO = 0.3;

type Way = 'copy' | 'streamed copy' | 'upload' | 'download';
const WAYS: readonly Way[] = ['copy', 'streamed copy', 'upload', 'download'];

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The transfer, with its outcome checked: the benchmark breaks rather than time a refusal. */
function checked(way: Way, transfer: Transfer): Transfer {
  const expected = way === 'upload' ? [200, 201] : way === 'download' ? [200] : [0];
  if (!expected.includes(transfer.status)) throw new Error(`${way} answered ${transfer.status}: ${transfer.text.slice(0, 500)}`);
  if (way === 'upload' && (JSON.parse(transfer.text) as { size: number }).size !== FILE_BYTES) throw new Error(`upload answered ${transfer.text}`);
  return transfer;
}

/** CPU ms the serving processes (and the whole machine) spent on each measured transfer. */
type CpuSpent = Record<string, number>[];

const mibPerSecond = (ms: number) => FILE_BYTES / MIB / (ms / 1000);

/**
 * What the gateway, runs (the sandbox's `cat` not included: it is runs' grandchild) and the moving client process
 * spent per MiB moved.
 */
function reportCpu(way: Way, spent: CpuSpent): void {
  const perMib = (name: string) => (sum(spent.map((one) => one[name] as number)) / (spent.length * (FILE_BYTES / MIB))).toFixed(2);
  log(`  ${way.padEnd(9)} gateway ${perMib('gateway')}, runs ${perMib('runs')}, client ${perMib('client')}; machine ${perMib('machine')} (every core, other jobs included)`);
}

function report(times: Map<Way, number[]>, cpu: Map<Way, CpuSpent>): void {
  const throughput = new Map(WAYS.map((way) => [way, mibPerSecond(median(times.get(way) as number[]))]));
  const copy = throughput.get('copy') as number;
  const streamed = throughput.get('streamed copy') as number;
  log();
  log(`${FILE_BYTES / MIB} MiB, median of ${ROUNDS} interleaved rounds (after one warm-up of each)`);
  log();
  log('way              MiB/s   median ms   / copy   / streamed copy   per round ms');
  for (const way of WAYS) {
    const rate = throughput.get(way) as number;
    const rounds = (times.get(way) as number[]).map((ms) => ms.toFixed(0)).join(', ');
    log(`${way.padEnd(15)} ${rate.toFixed(0).padStart(6)}  ${median(times.get(way) as number[]).toFixed(0).padStart(10)}  ${(rate / copy).toFixed(2).padStart(7)}  ${(rate / streamed).toFixed(2).padStart(16)}   ${rounds}`);
  }
  log();
  // The aim is judged against the streamed copy: the bytes of a transfer cross user space in every process on its
  // way, as they do in a streamed copy, while `fs.copyFile` may move none (copy_file_range; a reflink on btrfs or
  // XFS makes it instant), so its ratio measures the kernel's memcpy, not the path (bench/README.md says more).
  for (const way of ['upload', 'download'] as const) {
    const ratio = (throughput.get(way) as number) / streamed;
    const kernelRatio = (throughput.get(way) as number) / copy;
    log(`${way} throughput / local streamed copy: ${ratio.toFixed(2)}  aim >= ${AIM_RATIO}  ${ratio >= AIM_RATIO ? 'PASS' : 'MISS'}  (/ fs.copyFile: ${kernelRatio.toFixed(2)})`);
  }
  log();
  log('CPU ms per MiB over the measured rounds:');
  for (const way of ['upload', 'download'] as const) reportCpu(way, cpu.get(way) as CpuSpent);
}

async function benchmark(): Promise<void> {
  const startedAt = Date.now();
  const dir = await mkdtemp(join(tmpdir(), 'bench-files-'));
  log('starting the platform...');
  const platform = await Platform.start({ env: PLATFORM_ENV });
  try {
    await platform.applyIdentities(IDENTITIES);
    log('provisioning an intern...');
    const internId = await provisionScriptedIntern(platform, USER_KEY, 'bench-files', { description: 'files benchmark', timeoutMs: RUNNING_TIMEOUT_MS, pollMs: 100 });
    const remote: RemoteFile = { port: Number(new URL(platform.gatewayUrl).port), path: `/api/v1/interns/${internId}/files/bench/payload.bin`, userKey: USER_KEY };
    const source = join(dir, 'source.bin');
    await writeFile(source, randomBytes(FILE_BYTES));
    const sourceHash = await sha256Of(source);
    const destination = (way: Way) => join(dir, `${way.replace(' ', '-')}.bin`);

    const servers = { gateway: platform.process('gateway').pid, runs: platform.process('runs').pid };
    const cpu = new Map<Way, CpuSpent>(WAYS.map((way) => [way, []]));
    const move = async (way: Way): Promise<number> => {
      throwIfInterrupted();
      const target = destination(way);
      await rm(target, { force: true });
      const mover = await startMover();
      const { result, cpuMs } = await measureCpu(servers, () =>
        mover.move(
          way === 'upload' ? { way, remote, source, size: FILE_BYTES }
          : way === 'download' ? { way, remote, destination: target }
          : { way, source, destination: target },
        ),
      );
      const transfer = result.transfer;
      (cpu.get(way) as CpuSpent).push({ ...cpuMs, client: result.cpuMs });
      return checked(way, transfer).ms;
    };

    log('warming up (one of each; the upload creates the file the rounds replace)...');
    for (const way of WAYS) await move(way);
    if ((await sha256Of(destination('download'))) !== sourceHash) throw new Error('the downloaded bytes are not the uploaded ones');
    for (const spent of cpu.values()) spent.length = 0;

    log(`measuring (${ROUNDS} rounds)...`);
    const times = new Map<Way, number[]>(WAYS.map((way) => [way, []]));
    for (let round = 0; round < ROUNDS; round += 1) {
      // Each round starts one further along, so no way always follows the same one.
      const order = [...WAYS.slice(round % WAYS.length), ...WAYS.slice(0, round % WAYS.length)];
      for (const way of order) (times.get(way) as number[]).push(await move(way));
    }
    if ((await stat(destination('download'))).size !== FILE_BYTES || (await sha256Of(destination('download'))) !== sourceHash) {
      throw new Error('the last download is not the uploaded bytes');
    }
    report(times, cpu);
    log(`bytes checked: the first and last downloads are the source's (sha256); whole benchmark ${Math.round((Date.now() - startedAt) / 1000)} s`);
  } finally {
    await platform.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

runBenchmark('files', benchmark);
