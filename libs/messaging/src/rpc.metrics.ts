import { counter, histogram, LATENCY_BUCKETS_SECONDS, subjectLabel } from '@interns/metrics';

/**
 * How a request ended, seen by the caller: answered, refused with a contract reason below 500, or one of the
 * failures (`failed`: the service's own fault, answered as `internal_error` or another 5xx reason).
 */
export type RpcOutcome = 'ok' | 'refused' | 'failed' | 'timeout' | 'unavailable';

/**
 * Why a request failed (refusals are answers, not errors, and are not counted here; `remote_failure` is the
 * service's own fault):
 * `timeout`, `no_responders`, `broker_unreachable`, `empty_reply`, `transport_error`, `remote_failure`.
 */
export type RpcErrorReason =
  | 'timeout'
  | 'no_responders'
  | 'broker_unreachable'
  | 'empty_reply'
  | 'transport_error'
  | 'remote_failure';

const requestDuration = histogram<'subject' | 'outcome'>({
  name: 'interns_nats_request_duration_seconds',
  help: 'NATS requests sent by this process, by subject (without NATS_PREFIX) and outcome',
  labelNames: ['subject', 'outcome'],
  buckets: LATENCY_BUCKETS_SECONDS,
});

const requestErrors = counter<'subject' | 'reason'>({
  name: 'interns_nats_request_errors_total',
  help: 'NATS requests sent by this process that failed (timeouts, nobody serving, broker down, remote faults)',
  labelNames: ['subject', 'reason'],
});

/** Records one request; `startedAt` is a `performance.now()` reading. */
export function recordRpcRequest(subject: string, outcome: RpcOutcome, startedAt: number, reason?: RpcErrorReason): void {
  const label = subjectLabel(subject);
  requestDuration.observe({ subject: label, outcome }, (performance.now() - startedAt) / 1000);
  if (reason !== undefined) requestErrors.inc({ subject: label, reason });
}
