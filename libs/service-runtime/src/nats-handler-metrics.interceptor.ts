import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { PATTERN_METADATA } from '@nestjs/microservices/constants.js';
import { Observable, tap } from 'rxjs';
import { DomainError, ERROR_REASONS } from '@interns/contracts';
import { counter, histogram, LATENCY_BUCKETS_SECONDS, subjectLabel } from '@interns/metrics';

/**
 * How a handler ended: answered, refused with a contract reason (a DomainError below 500), or failed (anything
 * else, which DomainErrorRpcFilter answers as `internal_error`).
 */
export type HandledOutcome = 'ok' | 'refused' | 'failed';

const handledTotal = counter<'subject' | 'outcome'>({
  name: 'interns_nats_handled_total',
  help: 'NATS requests handled by this process, by subject (without NATS_PREFIX) and outcome',
  labelNames: ['subject', 'outcome'],
});

const handlerDuration = histogram<'subject'>({
  name: 'interns_nats_handler_duration_seconds',
  help: 'Time spent handling NATS requests in this process, by subject (without NATS_PREFIX)',
  labelNames: ['subject'],
  buckets: LATENCY_BUCKETS_SECONDS,
});

/** Label per handler, worked out once: the handler's pattern (a constant), never the concrete subject. */
const subjectOfHandler = new WeakMap<object, string>();

export function handlerSubjectLabel(handler: object): string {
  let label = subjectOfHandler.get(handler);
  if (label === undefined) {
    const patterns: unknown = Reflect.getMetadata(PATTERN_METADATA, handler);
    const pattern = Array.isArray(patterns) ? patterns[0] : patterns;
    label = typeof pattern === 'string' ? subjectLabel(pattern) : 'unknown';
    subjectOfHandler.set(handler, label);
  }
  return label;
}

export function handledOutcomeOf(error: unknown): HandledOutcome {
  return error instanceof DomainError && ERROR_REASONS[error.reason].status < 500 ? 'refused' : 'failed';
}

/** One handled request in `interns_nats_handled_total` and `interns_nats_handler_duration_seconds`. */
export function recordHandled(subject: string, outcome: HandledOutcome, startedAt: number): void {
  handledTotal.inc({ subject, outcome });
  handlerDuration.observe({ subject }, (performance.now() - startedAt) / 1000);
}

/** Measures every `@MessagePattern` handler: `interns_nats_handled_total` and `interns_nats_handler_duration_seconds`. */
@Injectable()
export class NatsHandlerMetricsInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'rpc') return next.handle();
    const subject = handlerSubjectLabel(context.getHandler());
    const startedAt = performance.now();
    return next.handle().pipe(
      tap({
        complete: () => recordHandled(subject, 'ok', startedAt),
        error: (error: unknown) => recordHandled(subject, handledOutcomeOf(error), startedAt),
      }),
    );
  }
}
