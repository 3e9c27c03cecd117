import { log, median, sum } from '../shared/bench-kit';
import type { LoadOptions, LoadResult } from './load-generator';

/**
 * The parts of the report the load benchmarks (list, create) print alike: the load settings, the table of
 * targets, the aims of gateway against bare, the non-2xx statuses and each round's figures.
 */

/** One target's measured runs, in round order. */
export interface LoadRuns {
  fixed: LoadResult[];
  closed: LoadResult[];
}

/** Medians over the rounds: fixed-rate p50 and p99 latency, closed-loop 2xx answers per second. */
export interface LoadSummary {
  p50: number;
  p99: number;
  throughput: number;
}

export interface ReportedTarget {
  name: string;
  runs: LoadRuns;
  summary: LoadSummary;
}

export function summarizeLoad(runs: LoadRuns): LoadSummary {
  return {
    p50: median(runs.fixed.map((r) => r.p50Ms)),
    p99: median(runs.fixed.map((r) => r.p99Ms)),
    throughput: median(runs.closed.map((r) => r.okPerSecond)),
  };
}

const allRuns = (runs: LoadRuns) => [...runs.fixed, ...runs.closed];

/** The statuses other than 2xx over `results`, e.g. `503 x4, 429 x1`, or `none`. */
function statusSummary(results: LoadResult[]): string {
  const counts: Record<string, number> = {};
  for (const result of results) {
    for (const [status, count] of Object.entries(result.statusCounts)) counts[status] = (counts[status] ?? 0) + count;
  }
  const shown = Object.entries(counts).filter(([status]) => !status.startsWith('2'));
  return shown.length === 0 ? 'none' : shown.map(([status, count]) => `${status} x${count}`).join(', ');
}

const ms = (value: number) => value.toFixed(2).padStart(9);
const rps = (value: number) => value.toFixed(0).padStart(13);
const verdict = (met: boolean) => (met ? 'met' : 'MISSED');

export function logLoadSettings(
  fixed: Pick<LoadOptions, 'connections' | 'durationSeconds' | 'overallRate'>,
  closed: Pick<LoadOptions, 'connections' | 'durationSeconds'>,
): void {
  log(
    `fixed rate: ${fixed.overallRate} req/s, ${fixed.connections} connections,` +
      ` ${fixed.durationSeconds} s; closed loop: ${closed.connections} connections,` +
      ` ${closed.durationSeconds} s`,
  );
}

export function logTargetTable(targets: ReportedTarget[]): void {
  log('target      p50 ms    p99 ms   closed req/s   non-2xx   conn errors');
  for (const { name, runs, summary } of targets) {
    const all = allRuns(runs);
    log(
      `${name.padEnd(8)}${ms(summary.p50)} ${ms(summary.p99)} ${rps(summary.throughput)}` +
        ` ${String(sum(all.map((r) => r.non2xx))).padStart(9)} ${String(sum(all.map((r) => r.errors))).padStart(13)}`,
    );
  }
}

/** Gateway against bare: p50 at most `aims.p50Ratio` times bare's, throughput at least `aims.throughputRatio` of it. */
export function logAims(gateway: LoadSummary, bare: LoadSummary, aims: { p50Ratio: number; throughputRatio: number }): void {
  const p50Ratio = gateway.p50 / bare.p50;
  const throughputRatio = gateway.throughput / bare.throughput;
  log(`p50 ratio (gateway / bare):        ${p50Ratio.toFixed(2)}  aim <= ${aims.p50Ratio}  ${verdict(p50Ratio <= aims.p50Ratio)}`);
  log(
    `throughput ratio (gateway / bare): ${throughputRatio.toFixed(2)}  aim >= ${aims.throughputRatio}` +
      `  ${verdict(throughputRatio >= aims.throughputRatio)}`,
  );
}

export function logStatuses(targets: ReportedTarget[]): void {
  log(`non-2xx statuses: ${targets.map(({ name, runs }) => `${name} ${statusSummary(allRuns(runs))}`).join('; ')}`);
}

export function logRounds(targets: ReportedTarget[], rounds: number): void {
  log('per round (fixed p50 / p99 ms, closed req/s):');
  for (let round = 0; round < rounds; round += 1) {
    const line = targets
      .map(({ name, runs }) => {
        const fixed = runs.fixed[round] as LoadResult;
        const closed = runs.closed[round] as LoadResult;
        return `${name} ${fixed.p50Ms.toFixed(2)} / ${fixed.p99Ms.toFixed(2)}, ${closed.okPerSecond.toFixed(0)}`;
      })
      .join('   ');
    log(`  round ${round + 1}: ${line}`);
  }
}
