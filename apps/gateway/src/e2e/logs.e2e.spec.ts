/**
 * End to end: every process writes one JSON object per line on stdout, and the correlation id the gateway
 * mints for a request (answered as x-correlation-id) is the `correlation_id` of the lines written for it
 * in the gateway and, across the NATS hop, in lifecycle. Tracing stays off by default: nothing is sent.
 */
import { randomUUID } from 'node:crypto';
import { OtlpCollector, Platform, PLATFORM_SERVICES } from '@interns/testing';
import type { PlatformService, ServiceProcess } from '@interns/testing';
import { IDENTITIES, KEYS } from '../testing/platform-identities.fixture';

const API = '/api/v1';
let collector: OtlpCollector;
let platform: Platform;

interface LogLine {
  time: string;
  level: string;
  service: string;
  context?: string;
  msg?: string;
  correlation_id?: string;
}

/** Every stdout line of a process, parsed; a line that is not a JSON object fails the test with the line. */
function logLinesOf(process: ServiceProcess): LogLine[] {
  return process.stdoutLines().map((line) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new Error(`not a JSON log line: ${line}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`not a JSON object: ${line}`);
    return parsed as LogLine;
  });
}

/** Waits until `process` has written a line for the request (stdout reaches the test a little later). */
async function linesWithCorrelation(process: ServiceProcess, correlationId: string): Promise<LogLine[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const lines = logLinesOf(process).filter((line) => line.correlation_id === correlationId);
    if (lines.length > 0) return lines;
    if (Date.now() > deadline) throw new Error(`no line with correlation_id ${correlationId}:\n${process.output()}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

beforeAll(async () => {
  collector = await OtlpCollector.start();
  platform = await Platform.start({
    env: {
      LOG_LEVEL: 'debug',
      // Where spans would go; OTEL_TRACES_EXPORTER is unset, so none may arrive.
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
  await platform.applyIdentities(IDENTITIES);
});

afterAll(async () => {
  await platform?.stop();
  await collector?.close();
});

describe('JSON logs', () => {
  it("writes a create request's correlation id in the gateway's and lifecycle's lines", async () => {
    const created = await platform.api(`${API}/interns`, { token: KEYS.alice, json: { name: `logged-${randomUUID().slice(0, 8)}` } });
    expect(created.status).toBe(201);
    const correlationId = created.headers.get('x-correlation-id') ?? '';
    expect(correlationId).toMatch(/^[0-9a-f-]{36}$/);

    const gatewayLines = await linesWithCorrelation(platform.process('gateway'), correlationId);
    expect(gatewayLines).toContainEqual(
      expect.objectContaining({ level: 'debug', service: 'gateway', context: 'Http', msg: expect.stringMatching(/^POST \/api\/v1\/interns 201 /) }),
    );
    const lifecycleLines = await linesWithCorrelation(platform.process('lifecycle'), correlationId);
    expect(lifecycleLines).toContainEqual(
      expect.objectContaining({ level: 'debug', service: 'lifecycle', context: 'Nats', msg: expect.stringMatching(/\.lifecycle\.cmd\.create-intern ok /) }),
    );
    for (const line of [...gatewayLines, ...lifecycleLines]) {
      expect(new Date(line.time).toISOString()).toBe(line.time);
    }
  });

  it('writes nothing but JSON objects on stdout, from start to shutdown, in every process, and sends no spans', async () => {
    const processes = new Map<PlatformService, ServiceProcess>(PLATFORM_SERVICES.map((service) => [service, platform.process(service)]));
    for (const service of PLATFORM_SERVICES) await platform.stopService(service);

    for (const [service, process] of processes) {
      const lines = logLinesOf(process);
      expect(lines.length).toBeGreaterThan(5);
      for (const line of lines) {
        expect(line).toMatchObject({ service, level: expect.any(String), time: expect.any(String) });
      }
      // Nest's start-up lines come through the same logger.
      expect(lines).toContainEqual(expect.objectContaining({ context: 'NestFactory', msg: 'Starting Nest application...' }));
    }
    // Tracing is off by default: after requests and a shutdown (when a provider would flush), nothing was sent.
    expect(collector.requests).toBe(0);
  });
});
