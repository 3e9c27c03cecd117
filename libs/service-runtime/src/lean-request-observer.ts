import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import { DomainError } from '@interns/contracts';
import type { LeanRequestObserver } from '@interns/messaging';
import { subjectLabel } from '@interns/metrics';
import { endSpan, runInRequestContext, spanOf, startNatsServerSpan } from '@interns/observability';
import { handledOutcomeOf, recordHandled } from './nats-handler-metrics.interceptor';

const logger = new Logger('Nats');
const labels = new Map<string, string>();

function labelOf(subject: string): string {
  let label = labels.get(subject);
  if (label === undefined) {
    label = subjectLabel(subject);
    labels.set(subject, label);
  }
  return label;
}

/**
 * What NatsRequestContextInterceptor and NatsHandlerMetricsInterceptor do for `@MessagePattern` handlers, for
 * the lean path: the same metrics, the same span and debug line. The request's AsyncLocalStorage context is
 * entered with tracing on, or when the handler logs and asks further (`entersRequestContext`: a chat turn); a hot
 * read does neither, and entering one costs every promise the handling makes a hook.
 */
export const observeLeanRequest: LeanRequestObserver = async (request, handle) => {
  const subject = labelOf(request.subject);
  const startedAt = performance.now();
  const traceContext = startNatsServerSpan(request.subject, request.headers, request.correlationId);
  try {
    const response =
      traceContext === undefined && !request.entersRequestContext
        ? await handle()
        : await runInRequestContext({ correlationId: request.correlationId, traceContext }, handle);
    recordHandled(subject, 'ok', startedAt);
    endSpan(spanOf(traceContext));
    debugLine(request.correlationId, subject, 'ok', startedAt);
    return response;
  } catch (error) {
    const outcome = handledOutcomeOf(error);
    recordHandled(subject, outcome, startedAt);
    const refusal = error instanceof DomainError && outcome === 'refused' ? error.reason : undefined;
    endSpan(spanOf(traceContext), refusal !== undefined ? { refusal } : { error });
    debugLine(request.correlationId, subject, refusal ?? 'failed', startedAt);
    throw error;
  }
};

function debugLine(correlationId: string | undefined, subject: string, ending: string, startedAt: number): void {
  if (!Logger.isLevelEnabled('debug')) return;
  logger.debug(`handled ${subject} ${ending} ${(performance.now() - startedAt).toFixed(1)}ms`, { correlation_id: correlationId });
}
