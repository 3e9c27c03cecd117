import { readFile } from 'node:fs/promises';
import type { ChildHandle } from '@interns/testing';
import { median, sleep } from '../shared/bench-kit';
import { InspectorGc } from '../streams/process-probe';

/**
 * What the idle benchmark reads of a process from outside, in KiB from /proc/<pid>/status: resident memory and
 * its parts (anonymous: heaps and stacks; file: mapped code, the node binary's included, shared with every
 * other node process), and the peak; from /proc/<pid>/smaps_rollup the proportional set size (each shared page
 * split between the processes mapping it), whose sum over processes is what they take of the machine together.
 */
export interface MemoryReading {
  rssKiB: number;
  anonKiB: number;
  fileKiB: number;
  peakKiB: number;
  pssKiB: number;
}

function field(status: string, name: string, pid: number): number {
  const match = new RegExp(`^${name}:\\s+(\\d+)\\s+kB$`, 'm').exec(status);
  if (match === null) throw new Error(`no ${name} in /proc/${pid}/status or smaps_rollup`);
  return Number(match[1]);
}

async function readOnce(pid: number): Promise<MemoryReading> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
  return {
    pssKiB: field(rollup, 'Pss', pid),
    rssKiB: field(status, 'VmRSS', pid),
    anonKiB: field(status, 'RssAnon', pid),
    fileKiB: field(status, 'RssFile', pid),
    peakKiB: field(status, 'VmHWM', pid),
  };
}

/**
 * Each process' reading, the median of `samples` readings `gapMs` apart (one reading can catch a timer's
 * allocations); every process is read at each tick, so all are read over the same second.
 */
export async function readMemory(pids: number[], samples = 5, gapMs = 200): Promise<MemoryReading[]> {
  const readings: MemoryReading[][] = pids.map(() => []);
  for (let i = 0; i < samples; i += 1) {
    if (i > 0) await sleep(gapMs);
    for (const [index, pid] of pids.entries()) (readings[index] as MemoryReading[]).push(await readOnce(pid));
  }
  return readings.map((taken) => ({
    rssKiB: median(taken.map((reading) => reading.rssKiB)),
    anonKiB: median(taken.map((reading) => reading.anonKiB)),
    fileKiB: median(taken.map((reading) => reading.fileKiB)),
    peakKiB: Math.max(...taken.map((reading) => reading.peakKiB)),
    pssKiB: median(taken.map((reading) => reading.pssKiB)),
  }));
}

/** How long a process gets to print its inspector's address after SIGUSR1. */
const INSPECTOR_WAIT_MS = 5000;

/**
 * A full garbage collection in a process started without its inspector: SIGUSR1 opens the inspector (Node's
 * own handler, no change to the service; the process runs with `--inspect-port=127.0.0.1:0`, so each opens on a
 * free port of its own), then `HeapProfiler.collectGarbage` through it. The open inspector itself then holds a
 * little memory (its thread and session), in every process alike. Resolves to false when no inspector address
 * appeared.
 */
export async function collectGarbage(child: ChildHandle): Promise<boolean> {
  const known = InspectorGc.of(child.output());
  if (known !== null) {
    await known.collect();
    return true;
  }
  process.kill(child.pid, 'SIGUSR1');
  const deadline = Date.now() + INSPECTOR_WAIT_MS;
  while (Date.now() < deadline) {
    const gc = InspectorGc.of(child.output());
    if (gc !== null) {
      await gc.collect();
      return true;
    }
    await sleep(100);
  }
  return false;
}
