/**
 * End to end: with OTEL_TRACES_EXPORTER=otlp the gateway and lifecycle export OTLP/HTTP (JSON) spans to
 * a collector (a local stand-in), and one create request is one trace across the NATS hop: the gateway's
 * HTTP server span, its client span for the NATS request, and lifecycle's server span child of that.
 */
import { randomUUID } from 'node:crypto';
import { subjectsFor } from '@interns/contracts';
import { CollectedSpan, OTLP_SPAN_KIND, OtlpCollector, Platform } from '@interns/testing';
import { IDENTITIES, KEYS } from '@interns/testing/e2e';

const API = '/api/v1';
let collector: OtlpCollector;
let platform: Platform;

beforeAll(async () => {
  collector = await OtlpCollector.start();
  platform = await Platform.start({
    services: ['lifecycle', 'gateway'],
    env: {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      // Spans are sent within a fifth of a second instead of the 5 s default.
      OTEL_BSP_SCHEDULE_DELAY: '200',
    },
  });
  await platform.applyIdentities(IDENTITIES);
});

afterAll(async () => {
  await platform?.stop();
  await collector?.close();
});

interface CreateTrace {
  http: CollectedSpan;
  client: CollectedSpan;
  handled: CollectedSpan;
}

it('traces a create from the HTTP request through the NATS request into lifecycle', async () => {
  const created = await platform.api(`${API}/interns`, { token: KEYS.alice, json: { name: `traced-${randomUUID().slice(0, 8)}` } });
  expect(created.status).toBe(201);
  const correlationId = created.headers.get('x-correlation-id');
  const createSubject = subjectsFor(platform.env.NATS_PREFIX).lifecycle.createIntern;

  const { http, client, handled } = await collector.waitFor((spans): CreateTrace | undefined => {
    const handledSpan = spans.find(
      (span) => span.service === 'lifecycle' && span.name === createSubject && span.attributes['interns.correlation_id'] === correlationId,
    );
    const clientSpan = spans.find((span) => span.spanId === handledSpan?.parentSpanId);
    const httpSpan = spans.find((span) => span.spanId === clientSpan?.parentSpanId);
    return handledSpan && clientSpan && httpSpan ? { http: httpSpan, client: clientSpan, handled: handledSpan } : undefined;
  });

  expect(http).toMatchObject({ service: 'gateway', name: `POST ${API}/interns`, kind: OTLP_SPAN_KIND.server, parentSpanId: undefined });
  expect(http.attributes).toMatchObject({
    'http.request.method': 'POST',
    'http.route': `${API}/interns`,
    'http.response.status_code': 201,
  });
  expect(client).toMatchObject({ service: 'gateway', name: createSubject, kind: OTLP_SPAN_KIND.client });
  expect(client.attributes).toMatchObject({ 'messaging.system': 'nats', 'interns.correlation_id': correlationId });
  expect(handled).toMatchObject({ service: 'lifecycle', kind: OTLP_SPAN_KIND.server });
  expect(new Set([http.traceId, client.traceId, handled.traceId]).size).toBe(1);
});

it('names a route span by its pattern, never by the ids in the path', async () => {
  const missing = randomUUID();
  const answer = await platform.api(`${API}/interns/${missing}`, { token: KEYS.alice });
  expect(answer.status).toBe(404);
  const correlationId = answer.headers.get('x-correlation-id');

  const http = await collector.waitFor((spans) =>
    spans.find((span) => span.service === 'gateway' && span.kind === OTLP_SPAN_KIND.server && span.attributes['url.path'] === `${API}/interns/${missing}`),
  );
  expect(http.name).toBe(`GET ${API}/interns/:intern_id`);
  expect(http.attributes['http.response.status_code']).toBe(404);
  // The refusal came back over NATS: lifecycle's span is in the same trace and records it as a refusal.
  const handled = await collector.waitFor((spans) =>
    spans.find((span) => span.service === 'lifecycle' && span.attributes['interns.correlation_id'] === correlationId),
  );
  expect(handled.traceId).toBe(http.traceId);
  expect(handled.attributes['interns.refusal']).toEqual(expect.any(String));
});
