/** Request subjects end in `<service>.<cmd|qry>.<name>` after NATS_PREFIX (which may hold dots itself). */
const SUBJECT_LABEL_TOKENS = 3;

/**
 * The `subject` label of NATS request metrics: the subject without NATS_PREFIX, e.g.
 * `test_1.a.lifecycle.qry.get-intern` -> `lifecycle.qry.get-intern`. Cut by the subject's shape
 * (`libs/contracts` subjects.ts), so callers need not know the prefix; a shorter subject is kept whole.
 */
export function subjectLabel(subject: string): string {
  let cut = subject.length;
  for (let token = 0; token < SUBJECT_LABEL_TOKENS; token += 1) {
    cut = subject.lastIndexOf('.', cut - 1);
    if (cut < 0) return subject;
  }
  return subject.slice(cut + 1);
}

/** Histogram buckets (seconds) for request latencies: 1 ms to 10 s. */
export const LATENCY_BUCKETS_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Histogram buckets (seconds) for slow work such as provisioning steps: 10 ms to 5 min. */
export const SLOW_WORK_BUCKETS_SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
