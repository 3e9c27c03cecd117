import { AsyncLocalStorage } from 'node:async_hooks';
import { context as otelContext, type Context } from '@opentelemetry/api';

/**
 * What the work done for one request knows about it, wherever that work runs in the process: set by the
 * gateway per HTTP request and by services per handled NATS request, read by the JSON logger (every
 * line carries `correlation_id`) and by RpcClient (the id and the trace travel with further requests).
 */
export interface RequestContext {
  readonly correlationId: string | undefined;
  /** The OpenTelemetry context holding the request's span; undefined when tracing is off. */
  traceContext?: Context;
}

const storage = new AsyncLocalStorage<RequestContext>();

/**
 * Runs `work` (and everything it starts) inside `request`. With a trace context it is made OpenTelemetry's
 * active context too, so spans started underneath become its children.
 */
export function runInRequestContext<T>(request: RequestContext, work: () => T): T {
  const traceContext = request.traceContext;
  if (traceContext === undefined) return storage.run(request, work);
  return storage.run(request, () => otelContext.with(traceContext, work));
}

/** The request being handled, if any. */
export function currentRequestContext(): RequestContext | undefined {
  return storage.getStore();
}

export function currentCorrelationId(): string | undefined {
  return storage.getStore()?.correlationId;
}
