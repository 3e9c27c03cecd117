import { headers as natsHeaders } from '@nats-io/transport-node';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { currentRequestContext, runInRequestContext } from './request-context';
import {
  activeTraceIds,
  endHttpServerSpan,
  endSpan,
  spanOf,
  startHttpServerSpan,
  startNatsClientSpan,
  startNatsServerSpan,
  startTracing,
  stopTracing,
  tracingEnabled,
} from './tracing';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/;

function defined<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('expected a value (is tracing on?)');
  return value;
}

describe('tracing off (OTEL_TRACES_EXPORTER=none)', () => {
  it('starts nothing and writes no traceparent', async () => {
    expect(await startTracing({ exporter: 'none', serviceName: 'gateway' })).toBe(false);
    expect(tracingEnabled()).toBe(false);
    const headers = natsHeaders();
    expect(startHttpServerSpan({ method: 'GET', route: '/x', url: '/x', headers: {} })).toBeUndefined();
    expect(startNatsClientSpan('p.lifecycle.qry.get-intern', headers, 'c')).toBeUndefined();
    expect(startNatsServerSpan('p.lifecycle.qry.get-intern', headers, 'c')).toBeUndefined();
    expect(headers.has('traceparent')).toBe(false);
    expect(activeTraceIds()).toBeUndefined();
  });
});

describe('tracing on', () => {
  const exporter = new InMemorySpanExporter();

  beforeAll(async () => {
    expect(await startTracing({ exporter: 'otlp', serviceName: 'test-service', spanExporter: exporter })).toBe(true);
  });

  afterAll(async () => {
    await stopTracing();
    expect(tracingEnabled()).toBe(false);
  });

  beforeEach(() => exporter.reset());

  it('links HTTP server span -> NATS client span -> the service side server span in one trace', async () => {
    const httpContext = startHttpServerSpan({
      method: 'POST',
      route: '/api/v1/interns',
      url: '/api/v1/interns?x=1',
      headers: {},
    });
    expect(httpContext).toBeDefined();
    const headers = natsHeaders();
    await runInRequestContext({ correlationId: 'corr-9', traceContext: httpContext }, async () => {
      await Promise.resolve();
      expect(activeTraceIds()?.span_id).toBe(spanOf(httpContext)?.spanContext().spanId);
      endSpan(startNatsClientSpan('p.lifecycle.cmd.create-intern', headers, currentRequestContext()?.correlationId));
    });
    const traceparent = headers.get('traceparent');
    expect(traceparent).toMatch(TRACEPARENT);

    // What the service does with the message's headers.
    const serverContext = startNatsServerSpan('p.lifecycle.cmd.create-intern', headers, 'corr-9');
    endSpan(spanOf(serverContext), { refusal: 'name_taken' });
    endHttpServerSpan(defined(httpContext), 201);

    const spans = exporter.getFinishedSpans();
    const http = spans.find((span) => span.kind === SpanKind.SERVER && span.name === 'POST /api/v1/interns');
    const client = spans.find((span) => span.kind === SpanKind.CLIENT);
    const server = spans.find((span) => span.kind === SpanKind.SERVER && span.name === 'p.lifecycle.cmd.create-intern');
    expect(http?.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/api/v1/interns',
      'url.path': '/api/v1/interns',
      'http.response.status_code': 201,
    });
    expect(client?.parentSpanContext?.spanId).toBe(http?.spanContext().spanId);
    expect(client?.attributes).toMatchObject({ 'messaging.system': 'nats', 'interns.correlation_id': 'corr-9' });
    expect(traceparent).toBe(`00-${client?.spanContext().traceId}-${client?.spanContext().spanId}-01`);
    expect(server?.spanContext().traceId).toBe(http?.spanContext().traceId);
    expect(server?.parentSpanContext?.spanId).toBe(client?.spanContext().spanId);
    expect(server?.attributes['interns.refusal']).toBe('name_taken');
    expect(server?.status.code).toBe(SpanStatusCode.UNSET);
    expect(http?.resource.attributes['service.name']).toBe('test-service');
  });

  it('continues a trace the HTTP caller started, and marks failures', () => {
    const callerTraceId = '0af7651916cd43dd8448eb211c80319c';
    const httpContext = startHttpServerSpan({
      method: 'GET',
      route: undefined,
      url: '/nowhere',
      headers: { traceparent: `00-${callerTraceId}-b7ad6b7169203331-01` },
    });
    endHttpServerSpan(defined(httpContext), 503);
    const serverContext = startNatsServerSpan('p.runs.cmd.start', undefined, undefined);
    endSpan(spanOf(serverContext), { error: new Error('database gone') });

    const [http, server] = exporter.getFinishedSpans();
    expect(http.name).toBe('GET');
    expect(http.spanContext().traceId).toBe(callerTraceId);
    expect(http.status.code).toBe(SpanStatusCode.ERROR);
    // No traceparent on the message: a trace of its own.
    expect(server.parentSpanContext).toBeUndefined();
    expect(server.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'database gone' });
    expect(server.events.map((event) => event.name)).toEqual(['exception']);
    expect(trace.getSpan(defined(serverContext))).toBeDefined();
  });
});
