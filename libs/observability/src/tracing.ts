import type { IncomingHttpHeaders } from 'node:http';
import type { MsgHdrs } from '@nats-io/transport-node';
import {
  context as otelContext,
  defaultTextMapGetter,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';
import type { TracerProvider } from '@opentelemetry/sdk-trace';
import type { TracingOptions } from './tracing-provider';
import { natsHeadersGetter, natsHeadersSetter } from './trace-carriers';

export type { TracingOptions } from './tracing-provider';

interface ActiveTracing {
  provider: TracerProvider;
  tracer: Tracer;
  propagator: TextMapPropagator;
}

/** One provider per process; null while tracing is off, so every helper below is a single null check. */
let active: ActiveTracing | null = null;

const TRACER_NAME = 'interns';

/**
 * Turns tracing on for this process unless the exporter is `none`: a TracerProvider exporting in batches
 * (OTLP/HTTP JSON, whose endpoint the exporter reads from OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or JSON log lines for `console`), the AsyncLocalStorage context
 * manager and the W3C trace-context propagator, registered as OpenTelemetry's globals. A second call
 * while on keeps the first provider. Returns whether tracing is on. The SDK (tracing-provider.ts) is loaded only
 * then: with tracing off (the default) a service neither loads nor holds it.
 */
export async function startTracing(options: TracingOptions): Promise<boolean> {
  if (active !== null) return true;
  if (options.spanExporter === undefined && options.exporter === 'none') return false;
  const { createTracing } = await import('./tracing-provider');
  if (active !== null) return true;
  const created = createTracing(options);
  if (created === null) return false;
  active = { ...created, tracer: created.provider.getTracer(TRACER_NAME) };
  return true;
}

/** Sends what is still buffered and turns tracing off (app shutdown). */
export async function stopTracing(): Promise<void> {
  const current = active;
  if (current === null) return;
  active = null;
  try {
    await current.provider.shutdown();
  } finally {
    trace.disable();
    propagation.disable();
    otelContext.disable();
  }
}

export function tracingEnabled(): boolean {
  return active !== null;
}

/**
 * The gateway's SERVER span for one HTTP request, named `<METHOD> <route pattern>`, child of the caller's
 * `traceparent` when it sent one. Returns the context holding it; undefined when tracing is off.
 */
export function startHttpServerSpan(request: {
  method: string;
  /** The matched route pattern (`/api/v1/interns/:intern_id`); undefined when no route matched. */
  route: string | undefined;
  /** As requested, query included (only the path is recorded). */
  url: string;
  headers: IncomingHttpHeaders;
}): Context | undefined {
  if (active === null) return undefined;
  const queryAt = request.url.indexOf('?');
  const parent = active.propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter);
  const name = request.route === undefined ? request.method : `${request.method} ${request.route}`;
  const span = active.tracer.startSpan(
    name,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'http.request.method': request.method,
        'url.path': queryAt === -1 ? request.url : request.url.slice(0, queryAt),
        ...(request.route === undefined ? {} : { 'http.route': request.route }),
      },
    },
    parent,
  );
  return trace.setSpan(parent, span);
}

/** Ends the request's span with its status code (a 5xx marks it failed). */
export function endHttpServerSpan(traceContext: Context, statusCode: number): void {
  const span = trace.getSpan(traceContext);
  if (span === undefined) return;
  span.setAttribute('http.response.status_code', statusCode);
  if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/**
 * A CLIENT span for one NATS request, child of the active context (the request being handled), with
 * `traceparent` written into the outgoing headers. Undefined when tracing is off.
 */
export function startNatsClientSpan(subject: string, headers: MsgHdrs, correlationId: string | undefined): Span | undefined {
  if (active === null) return undefined;
  const span = active.tracer.startSpan(subject, {
    kind: SpanKind.CLIENT,
    attributes: natsAttributes(subject, 'send', correlationId),
  });
  active.propagator.inject(trace.setSpan(otelContext.active(), span), headers, natsHeadersSetter);
  return span;
}

/**
 * A SERVER span for a handled NATS request, child of the `traceparent` it carries. Returns the context
 * holding it; undefined when tracing is off.
 */
export function startNatsServerSpan(subject: string, headers: MsgHdrs | undefined, correlationId: string | undefined): Context | undefined {
  if (active === null) return undefined;
  const parent = headers === undefined ? ROOT_CONTEXT : active.propagator.extract(ROOT_CONTEXT, headers, natsHeadersGetter);
  const span = active.tracer.startSpan(
    subject,
    { kind: SpanKind.SERVER, attributes: natsAttributes(subject, 'process', correlationId) },
    parent,
  );
  return trace.setSpan(parent, span);
}

function natsAttributes(subject: string, operation: string, correlationId: string | undefined) {
  return {
    'messaging.system': 'nats',
    'messaging.destination.name': subject,
    'messaging.operation.type': operation,
    ...(correlationId === undefined ? {} : { 'interns.correlation_id': correlationId }),
  };
}

/** How a traced piece of work ended: a refusal (a contract error reason) is an answer, not a fault. */
export interface SpanOutcome {
  refusal?: string;
  error?: unknown;
}

export function endSpan(span: Span | undefined, outcome: SpanOutcome = {}): void {
  if (span === undefined) return;
  if (outcome.refusal !== undefined) {
    span.setAttribute('interns.refusal', outcome.refusal);
  } else if (outcome.error !== undefined) {
    const error = outcome.error;
    if (error instanceof Error) span.recordException(error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  }
  span.end();
}

/** The span a context holds (see startHttpServerSpan, startNatsServerSpan). */
export function spanOf(traceContext: Context | undefined): Span | undefined {
  return traceContext === undefined ? undefined : trace.getSpan(traceContext);
}

/** `trace_id` and `span_id` of the active span, for log lines; undefined when tracing is off or no span is active. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  if (active === null) return undefined;
  const spanContext = trace.getSpanContext(otelContext.active());
  return spanContext === undefined ? undefined : { trace_id: spanContext.traceId, span_id: spanContext.spanId };
}
