import { createServer, IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** OTLP span kinds as sent on the wire (the API's SpanKind + 1). */
export const OTLP_SPAN_KIND = { server: 2, client: 3 } as const;

/** One received span, flattened from the OTLP/JSON export request. */
export interface CollectedSpan {
  /** `service.name` of the resource that sent it. */
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number };
}

interface OtlpExportRequest {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: OtlpAttribute[] }[];
    }[];
  }[];
}

function attributesOf(attributes: OtlpAttribute[] = []): Record<string, unknown> {
  const flat: Record<string, unknown> = {};
  for (const { key, value } of attributes) {
    flat[key] = value.stringValue ?? (value.intValue === undefined ? undefined : Number(value.intValue)) ?? value.boolValue ?? value.doubleValue;
  }
  return flat;
}

async function bodyOf(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks);
  return request.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
}

/**
 * A stand-in OpenTelemetry collector: accepts OTLP/HTTP JSON trace exports on `POST /v1/traces` (what
 * @opentelemetry/exporter-trace-otlp-http sends) and keeps every span.
 */
export class OtlpCollector {
  private readonly received: CollectedSpan[] = [];
  /** Export requests of any kind received (a protobuf one would be counted, then refused). */
  requests = 0;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpCollector> {
    let collector: OtlpCollector | null = null;
    const server = createServer((request, response) => {
      collector?.accept(request).then(
        (status) => response.writeHead(status, { 'content-type': 'application/json' }).end('{}'),
        () => response.writeHead(400).end(),
      );
    });
    collector = new OtlpCollector(server);
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return collector;
  }

  /** `OTEL_EXPORTER_OTLP_ENDPOINT` for the services (the exporter appends `/v1/traces`). */
  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  spans(): CollectedSpan[] {
    return [...this.received];
  }

  /** Polls until `found` returns something for the spans received so far; fails after `timeoutMs`. */
  async waitFor<T>(found: (spans: CollectedSpan[]) => T | undefined, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const result = found(this.spans());
      if (result !== undefined) return result;
      if (Date.now() > deadline) {
        throw new Error(`the collector never got the spans looked for; it has ${JSON.stringify(this.spans(), null, 1)}`);
      }
      await new Promise((done) => setTimeout(done, 100));
    }
  }

  close(): Promise<void> {
    return new Promise((done) => this.server.close(() => done()));
  }

  private async accept(request: IncomingMessage): Promise<number> {
    this.requests += 1;
    const body = await bodyOf(request);
    if (request.method !== 'POST' || request.url !== '/v1/traces') return 404;
    if (!String(request.headers['content-type']).startsWith('application/json')) return 415;
    const exported = JSON.parse(body.toString('utf8')) as OtlpExportRequest;
    for (const resourceSpans of exported.resourceSpans ?? []) {
      const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
      for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
        for (const span of scopeSpans.spans ?? []) {
          this.received.push({
            service,
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId || undefined,
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
          });
        }
      }
    }
    return 200;
  }
}
