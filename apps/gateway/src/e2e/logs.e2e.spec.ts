/**
 * End to end: every process writes one JSON object per line on stdout. At the default level (`info`) the lines are
 * the ones worth reading: one per request at the gateway (method, route pattern, status, ms, correlation id), one
 * per intern status change in lifecycle (from -> to), one per run end in runs (status, finish reason, ms), and none
 * of Nest's start-up chatter (module wiring, mapped routes), which is `debug`. The correlation id the gateway mints
 * for a request (answered as x-correlation-id) is on its request line and on the transitions it caused. Tracing
 * stays off by default: nothing is sent.
 */
import { randomUUID } from 'node:crypto';
import { OtlpCollector, Platform, PLATFORM_SERVICES } from '@interns/testing';
import type { PlatformService, ServiceProcess } from '@interns/testing';
import { createRunningIntern, IDENTITIES, KEYS, prompt, readStream } from '@interns/testing/e2e';

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
  [field: string]: unknown;
}

/** Nest's own start-up contexts: below `info`, so never in these lines. */
const FRAMEWORK_CONTEXTS = ['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication', 'NestMicroservice'];

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

/** Waits until `process` has written a line that `matches` (stdout reaches the test a little later). */
async function lineOf(process: ServiceProcess, matches: (line: LogLine) => boolean): Promise<LogLine> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const found = logLinesOf(process).find(matches);
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`no such line:\n${process.output()}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

beforeAll(async () => {
  collector = await OtlpCollector.start();
  platform = await Platform.start({
    env: {
      // Where spans would go; OTEL_TRACES_EXPORTER is unset, so none may arrive. LOG_LEVEL is left at its default.
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
  await platform.applyIdentities(IDENTITIES);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
  await collector?.close();
}, 60_000);

describe('JSON logs at info', () => {
  it("writes one line per request at the gateway, with the route pattern and the correlation id, and lifecycle's transition under it", async () => {
    const created = await platform.api(`${API}/interns`, { token: KEYS.alice, json: { name: `logged-${randomUUID().slice(0, 8)}` } });
    expect(created.status).toBe(201);
    const correlationId = created.headers.get('x-correlation-id') ?? '';
    expect(correlationId).toMatch(/^[0-9a-f-]{36}$/);
    const internId = created.body.id as string;

    const request = await lineOf(platform.process('gateway'), (line) => line.correlation_id === correlationId && line.context === 'Http');
    expect(request).toMatchObject({ level: 'info', service: 'gateway', method: 'POST', route: '/api/v1/interns', status: 201, duration_ms: expect.any(Number) });
    expect(request.msg).toMatch(/^POST \/api\/v1\/interns 201 \d+(\.\d)?ms$/);
    expect(new Date(request.time).toISOString()).toBe(request.time);

    // A route with an id in it is written as its pattern: no id (and no query string) in the line.
    const read = await platform.api(`${API}/interns/${internId}?fields=x`, { token: KEYS.alice });
    const readId = read.headers.get('x-correlation-id') ?? '';
    const readLine = await lineOf(platform.process('gateway'), (line) => line.correlation_id === readId && line.context === 'Http');
    expect(readLine).toMatchObject({ level: 'info', method: 'GET', route: '/api/v1/interns/:intern_id', status: read.status });
    expect(JSON.stringify(readLine)).not.toContain(internId);

    const transition = await lineOf(platform.process('lifecycle'), (line) => line.intern_id === internId);
    expect(transition).toMatchObject({
      level: 'info',
      service: 'lifecycle',
      context: 'Interns',
      msg: `intern ${internId} none -> stopped`,
      from: 'none',
      to: 'stopped',
      correlation_id: correlationId,
    });
  });

  it("writes each status change of a provisioning, and a run's end with its status, finish reason and duration", async () => {
    const internId = await createRunningIntern(platform);
    const transitions = async () =>
      logLinesOf(platform.process('lifecycle'))
        .filter((line) => line.intern_id === internId)
        .map((line) => `${String(line.from)} -> ${String(line.to)}`);
    await lineOf(platform.process('lifecycle'), (line) => line.intern_id === internId && line.to === 'running');
    expect(await transitions()).toEqual(['none -> queued', 'queued -> provisioning', 'provisioning -> running']);

    const stream = await prompt(platform, internId, '/say hello');
    const summary = await readStream(stream);
    expect(summary.finishReason).toBe('stop');
    const runId = String(stream.headers['x-run-id']);
    const ended = await lineOf(platform.process('runs'), (line) => line.run_id === runId);
    expect(ended).toMatchObject({
      level: 'info',
      service: 'runs',
      context: 'Runs',
      intern_id: internId,
      status: 'completed',
      finish_reason: 'stop',
      reason: null,
      duration_ms: expect.any(Number),
    });
    expect(ended.msg).toMatch(new RegExp(`^run ${runId} of intern ${internId} completed \\(stop\\) in \\d+ms$`));
  });

  it('writes nothing but JSON objects on stdout, from start to shutdown, none of them framework chatter, and sends no spans', async () => {
    const processes = new Map<PlatformService, ServiceProcess>(PLATFORM_SERVICES.map((service) => [service, platform.process(service)]));
    for (const service of PLATFORM_SERVICES) await platform.stopService(service);

    for (const [service, process] of processes) {
      const lines = logLinesOf(process);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) {
        expect(line).toMatchObject({ service, level: expect.any(String), time: expect.any(String) });
        expect(['info', 'warn', 'error', 'fatal']).toContain(line.level);
      }
      expect(lines.filter((line) => FRAMEWORK_CONTEXTS.includes(String(line.context)))).toEqual([]);
      expect(lines.filter((line) => /Mapped \{/.test(String(line.msg)))).toEqual([]);
      // Its own start line says it started, not that it is ready: readiness is /health/ready's to tell.
      expect(lines).toContainEqual(expect.objectContaining({ level: 'info', msg: expect.stringMatching(new RegExp(`^${service} started \\(HTTP port \\d+, NATS prefix "`)) }));
      expect(lines.filter((line) => /listening/.test(String(line.msg)))).toEqual([]);
    }
    // Tracing is off by default: after requests and a shutdown (when a provider would flush), nothing was sent.
    expect(collector.requests).toBe(0);
  });
});
