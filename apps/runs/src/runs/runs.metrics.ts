import { counter, gauge, histogram } from '@interns/service-runtime';

/** Runs this replica owns right now (paused on a question included). */
export const activeRunsGauge = gauge({ name: 'interns_runs_active', help: 'Runs going on this replica' });

/** Questions waiting for the caller's answer on this replica. */
export const openQuestionsGauge = gauge({ name: 'interns_questions_open', help: 'service.provide_input questions waiting for an answer' });

/** How long runs took, by how they ended (`stop`, `error`, `cancelled:<reason>`). */
export const runDurationHistogram = histogram<'ending'>({
  name: 'interns_run_duration_seconds',
  help: 'Duration of runs from start to end',
  labelNames: ['ending'],
  buckets: [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600],
});

/** Chunk log appends JetStream did not take: readers of those runs end with `stream_severed`. Alert on any. */
export const chunkLogFailuresCounter = counter({
  name: 'interns_run_chunk_log_failures_total',
  help: 'Run chunks (or ends) the run chunk stream did not acknowledge',
});
