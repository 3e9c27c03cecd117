import { performance } from 'node:perf_hooks';
import { Injectable, Logger, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import type { NatsContext } from '@nestjs/microservices';
import { tap, type Observable } from 'rxjs';
import { CORRELATION_HEADER, DomainError } from '@interns/contracts';
import { runInRequestContext, type RequestContext } from './request-context';
import { endSpan, spanOf, startNatsServerSpan } from './tracing';

/**
 * Runs every `@MessagePattern` handler inside the request it serves: the correlation id from the NATS
 * header (log lines, further RPCs) and, with tracing on, a SERVER span child of the caller's `traceparent`.
 * At debug level it logs one line per handled request.
 */
@Injectable()
export class NatsRequestContextInterceptor implements NestInterceptor {
  private readonly logger = new Logger('Nats');

  intercept(execution: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (execution.getType() !== 'rpc') return next.handle();
    const nats = execution.switchToRpc().getContext<NatsContext>();
    const subject = nats.getSubject();
    const headers = nats.getHeaders();
    const correlationId = headers?.get(CORRELATION_HEADER) || undefined;
    const request: RequestContext = { correlationId, traceContext: startNatsServerSpan(subject, headers, correlationId) };
    const startedAt = performance.now();
    // handle() binds the handler to the async context it is called in, so calling it inside is enough.
    const handled = runInRequestContext(request, () => next.handle());
    return handled.pipe(
      tap({
        complete: () => this.finish(request, subject, startedAt, {}),
        error: (error: unknown) =>
          this.finish(request, subject, startedAt, error instanceof DomainError ? { refusal: error.reason } : { error }),
        // A caller that stops listening (never for request/reply, but possible for a stream) ends it too.
        unsubscribe: () => this.finish(request, subject, startedAt, { error: 'unsubscribed' }),
      }),
    );
  }

  private finish(request: RequestContext, subject: string, startedAt: number, outcome: { refusal?: string; error?: unknown }): void {
    endSpan(spanOf(request.traceContext), outcome);
    if (!Logger.isLevelEnabled('debug')) return;
    const elapsed = `${(performance.now() - startedAt).toFixed(1)}ms`;
    const ending = outcome.refusal ?? (outcome.error === undefined ? 'ok' : 'failed');
    runInRequestContext(request, () => this.logger.debug(`handled ${subject} ${ending} ${elapsed}`));
  }
}
