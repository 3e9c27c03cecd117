/**
 * The OpenTelemetry SDK side of tracing: the provider, its span processor and exporter, the context manager and the
 * propagator, registered as OpenTelemetry's globals. Loaded by `startTracing` (tracing.ts) only when tracing is on.
 */
import { Logger } from '@nestjs/common';
import { context as otelContext, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { ExportResultCode, W3CTraceContextPropagator, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  SimpleSpanProcessor,
  TracerProvider,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import type { TracesExporterName } from '@interns/contracts';

export interface TracingOptions {
  /** OTEL_TRACES_EXPORTER; `none` leaves tracing off. */
  exporter: TracesExporterName;
  /** `service.name` of every span (OTEL_SERVICE_NAME, else the process's own name). */
  serviceName: string;
  /** How long finished spans wait to be sent together (ms). */
  batchDelayMs?: number;
  /** Tests: export every span at once to this exporter instead of the configured one. */
  spanExporter?: SpanExporter;
}

/** Builds and registers the process's tracing; null for the `none` exporter without a test exporter. */
export function createTracing(options: TracingOptions): { provider: TracerProvider; propagator: W3CTraceContextPropagator } | null {
  const exporter = options.spanExporter ?? exporterFor(options.exporter);
  if (exporter === null) return null;
  const processor = options.spanExporter
    ? new SimpleSpanProcessor({ exporter })
    : new BatchSpanProcessor({ exporter, scheduledDelayMillis: options.batchDelayMs });
  const provider = new TracerProvider({
    resource: defaultResource().merge(resourceFromAttributes({ 'service.name': options.serviceName })),
    spanProcessors: [processor],
  });
  const propagator = new W3CTraceContextPropagator();
  otelContext.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(propagator);
  trace.setGlobalTracerProvider(provider);
  return { provider, propagator };
}

function exporterFor(name: TracesExporterName): SpanExporter | null {
  switch (name) {
    case 'none':
      return null;
    case 'otlp':
      return new OTLPTraceExporter();
    case 'console':
      return new JsonLogSpanExporter();
    default: {
      const unknown: never = name;
      throw new Error(`unknown traces exporter ${String(unknown)}`);
    }
  }
}

/**
 * `console`: each finished span as one JSON log line (context `Tracing`), so stdout stays one JSON object
 * per line; the SDK's ConsoleSpanExporter prints multi-line inspected objects.
 */
class JsonLogSpanExporter implements SpanExporter {
  private readonly logger = new Logger('Tracing');

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    for (const span of spans) {
      const { traceId, spanId } = span.spanContext();
      this.logger.log({
        span: {
          name: span.name,
          kind: SpanKind[span.kind],
          trace_id: traceId,
          span_id: spanId,
          parent_span_id: span.parentSpanContext?.spanId,
          duration_ms: span.duration[0] * 1e3 + span.duration[1] / 1e6,
          status: SpanStatusCode[span.status.code],
          attributes: span.attributes,
        },
      });
    }
    done({ code: ExportResultCode.SUCCESS });
  }

  /** Nothing is buffered here: every span was written when exported. */
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}
