import { log, percentile } from '../shared/bench-kit';
import type { TurnTiming } from './turn-client';
import type { ObservedTurn } from './turn-observer';

/** The figures of the chat turn benchmark, printed as tables: latencies per target, then the platform's steps. */

/** One platform's measured turns and what the observer saw of each (same order). */
export interface PlatformTurns {
  name: string;
  timings: TurnTiming[];
  observed: ObservedTurn[];
  /** Integration events seen on `<prefix>.evt.>` during the measured turns. */
  integrationEvents: number;
}

export interface ReportInput {
  turns: number;
  warmUpTurns: number;
  gapMs: number;
  prompt: string;
  /** Issue 29's aims for the platform's turn. */
  aims: { firstChunkOverBareMs: number; doneOverBareMs: number; p99OverP50: number };
  platforms: PlatformTurns[];
  bare: TurnTiming[];
  answer: { bytes: number; events: number; identical: boolean };
  probes: { roundTrip: number[]; commit: number[] };
}

const ms = (value: number, width = 8) => (Number.isNaN(value) ? '-' : value.toFixed(2)).padStart(width);

function mean(values: number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0) / values.length;
}

interface Latencies {
  headers: number[];
  content: number[];
  done: number[];
}

function latenciesOf(timings: TurnTiming[]): Latencies {
  return {
    headers: timings.map((t) => t.headersAt - t.sentAt),
    content: timings.map((t) => t.contentAt - t.sentAt),
    done: timings.map((t) => t.doneAt - t.sentAt),
  };
}

const KEYS = ['headers', 'content', 'done'] as const;

function latencyRow(label: string, figure: (key: keyof Latencies, p: number) => number): string {
  return `${label.padEnd(30)}${KEYS.map((key) => `${ms(figure(key, 50))}${ms(figure(key, 99))}`).join('   ')}`;
}

type Moment = (timing: TurnTiming, seen: ObservedTurn) => number | null;

/** A step of the turn between two moments, each either the client's (TurnTiming) or the observer's. */
const STEPS: { label: string; from: Moment; to: Moment }[] = [
  { label: 'gateway in: request sent -> chat request on NATS', from: (t) => t.sentAt, to: (_t, s) => s.chatRequestAt },
  { label: 'runs: chat request -> intern lookup request', from: (_t, s) => s.chatRequestAt, to: (_t, s) => s.lookupRequestAt },
  { label: 'lifecycle: intern lookup -> its reply', from: (_t, s) => s.lookupRequestAt, to: (_t, s) => s.lookupReplyAt },
  { label: 'runs: lookup reply -> role chunk frame (run start)', from: (_t, s) => s.lookupReplyAt, to: (_t, s) => s.roleFrameAt },
  // Runs caches a start's intern lookup (issue 29): most turns ask lifecycle nothing.
  {
    label: 'runs: chat request -> role frame, lookup cached',
    from: (_t, s) => (s.lookupRequestAt === null ? s.chatRequestAt : null),
    to: (_t, s) => s.roleFrameAt,
  },
  { label: 'runs: role frame -> chat reply to the gateway', from: (_t, s) => s.roleFrameAt, to: (_t, s) => s.chatReplyAt },
  { label: 'gateway: chat reply -> response headers at client', from: (_t, s) => s.chatReplyAt, to: (t) => t.headersAt },
  { label: 'runs: role frame -> content frame (model turn)', from: (_t, s) => s.roleFrameAt, to: (_t, s) => s.contentFrameAt },
  { label: 'relay: content frame -> SSE content at client', from: (_t, s) => s.contentFrameAt, to: (t) => t.contentAt },
  { label: 'runs: content frame -> done frame (run ending)', from: (_t, s) => s.contentFrameAt, to: (_t, s) => s.doneFrameAt },
  { label: 'relay: done frame -> SSE [DONE] at client', from: (_t, s) => s.doneFrameAt, to: (t) => t.doneAt },
  { label: '(request sent -> first frame on runs.stream)', from: (t) => t.sentAt, to: (_t, s) => s.roleFrameAt },
];

function stepValues(platform: PlatformTurns, from: Moment, to: Moment): number[] {
  const values: number[] = [];
  platform.timings.forEach((timing, index) => {
    const seen = platform.observed[index] as ObservedTurn;
    const [start, end] = [from(timing, seen), to(timing, seen)];
    if (start !== null && end !== null) values.push(end - start);
  });
  return values;
}

export function report(input: ReportInput): void {
  const bare = latenciesOf(input.bare);
  const platforms = input.platforms.map((platform) => ({ platform, latencies: latenciesOf(platform.timings) }));

  log();
  log(
    `${input.turns} turns per target after ${input.warmUpTurns} warm-up turns each, interleaved, ${input.gapMs} ms apart;` +
      ` prompt ${JSON.stringify(input.prompt)} on local/scripted`,
  );
  log(
    `bare: node:http replaying the platform's captured answer (headers, ${input.answer.events} events,` +
      ` ${input.answer.bytes} bytes): ${input.answer.identical ? 'identical' : 'DIFFERENT (comparison not like for like)'}`,
  );
  log();
  log(`${''.padEnd(30)}   headers ms        first chunk ms        [DONE] ms`);
  log(`${'target'.padEnd(30)}  p50     p99        p50     p99        p50     p99`);
  for (const { platform, latencies } of platforms) log(latencyRow(platform.name, (key, p) => percentile(latencies[key], p)));
  log(latencyRow('bare', (key, p) => percentile(bare[key], p)));
  for (const { platform, latencies } of platforms) {
    const label = platforms.length === 1 ? 'overhead (platform - bare)' : `overhead (${platform.name} - bare)`;
    log(latencyRow(label, (key, p) => percentile(latencies[key], p) - percentile(bare[key], p)));
  }
  log();
  for (const { platform, latencies } of platforms) {
    const who = platforms.length === 1 ? '' : ` (${platform.name})`;
    const overBare = (key: keyof typeof latencies) => percentile(latencies[key], 50) - percentile(bare[key], 50);
    const spread = percentile(latencies.done, 99) / percentile(latencies.done, 50);
    const verdict = (met: boolean) => (met ? 'met' : 'MISSED');
    const { aims } = input;
    const firstChunk = overBare('content');
    const done = overBare('done');
    log(`aim${who}: p50 to first content chunk <= ${aims.firstChunkOverBareMs} ms over bare  ${verdict(firstChunk <= aims.firstChunkOverBareMs)} (${firstChunk.toFixed(2)} ms)`);
    log(`aim${who}: p50 to [DONE] <= ${aims.doneOverBareMs} ms over bare  ${verdict(done <= aims.doneOverBareMs)} (${done.toFixed(2)} ms)`);
    log(`aim${who}: p99 to [DONE] <= ${aims.p99OverP50}x its p50  ${verdict(spread <= aims.p99OverP50)} (${spread.toFixed(2)}x)`);
  }

  log();
  log('where a platform turn goes (each step per turn; NATS moments: when an observer in this process got the message)');
  log(`${'step'.padEnd(52)}${platforms.map(({ platform }) => `${platform.name.slice(0, 16).padStart(17)}`).join('')}`);
  log(`${''.padEnd(52)}${platforms.map(() => '   p50 ms  p99 ms').join('')}`);
  for (const step of STEPS) {
    const cells = platforms.map(({ platform }) => {
      const values = stepValues(platform, step.from, step.to);
      return `${ms(percentile(values, 50), 9)}${ms(percentile(values, 99))}`;
    });
    log(`${step.label.padEnd(52)}${cells.join('')}`);
  }
  log();
  for (const { platform } of platforms) {
    const acks = platform.observed.flatMap((seen) => seen.logAckMs);
    const incomplete = platform.observed.filter((seen) => seen.chatReplyAt === null || (seen.lookupRequestAt !== null && seen.lookupReplyAt === null)).length;
    const lookups = platform.observed.filter((seen) => seen.lookupRequestAt !== null).length;
    log(
      `${platform.name}, per turn on NATS: ${mean(platform.observed.map((s) => s.streamFrames)).toFixed(1)} frames on runs.stream (core),` +
        ` ${mean(platform.observed.map((s) => s.logAppends)).toFixed(1)} run chunk log appends (JetStream; ack seen ${ms(percentile(acks, 50), 0)} ms` +
        ` after the copy at p50), ${(platform.integrationEvents / input.turns).toFixed(1)} integration events (outbox relays, after the turn),` +
        ` ${lookups} of ${platform.observed.length} turns asked lifecycle for the intern (the others: runs' cache)` +
        `${incomplete > 0 ? `; ${incomplete} turns without every reply observed` : ''}`,
    );
  }
  const { roundTrip, commit } = input.probes;
  log(
    `PostgreSQL from this process: round trip (SELECT 1) p50 ${ms(percentile(roundTrip, 50), 0)} / p99 ${ms(percentile(roundTrip, 99), 0)} ms,` +
      ` one commit (INSERT) p50 ${ms(percentile(commit, 50), 0)} / p99 ${ms(percentile(commit, 99), 0)} ms`,
  );
}
