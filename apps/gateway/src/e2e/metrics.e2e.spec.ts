/**
 * End to end: every process answers `GET /metrics` in the Prometheus text format with the operations metrics
 * of issue 6 (HTTP by route and status, NATS request latency and handling, provisioning steps, outbox relay lag,
 * chat streams, runs), after real traffic: a provisioned intern, a list, a refusal, an unmatched path and a chat.
 */
import { randomUUID } from 'node:crypto';
import { Platform } from '@interns/testing';
import type { PlatformService } from '@interns/testing';
import { API, createRunningIntern, IDENTITIES, KEYS, prompt, readStream, sleep } from '@interns/testing/e2e';

const PROMETHEUS_TEXT = /^text\/plain; version=0\.0\.4; charset=utf-8$/;
const PROVISIONING_STEPS = ['prepare_disk', 'assign_hostname', 'boot_runtime', 'await_health'];
const CHAT_ROUTE = `${API}/interns/:intern_id/chat/completions`;

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a text exposition (comments skipped); label values unescaped. */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, raw] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[name] = raw.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

class Scrape {
  readonly samples: Sample[];

  constructor(readonly text: string) {
    this.samples = parseExposition(text);
  }

  /** Samples named `name` whose labels include `labels`. */
  find(name: string, labels: Record<string, string> = {}): Sample[] {
    return this.samples.filter(
      (sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
    );
  }

  /** The one sample named `name` with exactly these label values among its labels; fails when absent. */
  value(name: string, labels: Record<string, string> = {}): number {
    const found = this.find(name, labels);
    if (found.length !== 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
    return found[0].value;
  }

  /** Sum over every sample named `name` matching `labels` (0 when none). */
  total(name: string, labels: Record<string, string> = {}): number {
    return this.find(name, labels).reduce((sum, sample) => sum + sample.value, 0);
  }
}

let platform: Platform;
let internId: string;

function metricsUrl(service: PlatformService): string {
  return service === 'gateway' ? `${platform.gatewayUrl}/metrics` : `${platform.process(service).url}/metrics`;
}

async function scrape(service: PlatformService): Promise<Scrape> {
  const response = await fetch(metricsUrl(service));
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(PROMETHEUS_TEXT);
  return new Scrape(await response.text());
}

/** Scrapes until `check` passes (metrics written as a response closes or a run ends land a moment later). */
async function eventuallyScraped(service: PlatformService, check: (scraped: Scrape) => void, timeoutMs = 15_000): Promise<Scrape> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const scraped = await scrape(service);
    try {
      check(scraped);
      return scraped;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    await sleep(100);
  }
}

beforeAll(async () => {
  platform = await Platform.start({ env: { CHAT_TURNS_PER_MINUTE: '1000' } });
  await platform.applyIdentities(IDENTITIES);
  internId = await createRunningIntern(platform, KEYS.alice, 30_000);
  const listed = await platform.api(`${API}/interns?limit=5`, { token: KEYS.alice });
  expect(listed.status).toBe(200);
  const missing = await platform.api(`${API}/interns/${randomUUID()}`, { token: KEYS.alice });
  expect(missing.status).toBe(404);
  const unmatched = await platform.api(`${API}/nothing-here/${randomUUID()}`, { token: KEYS.alice });
  expect(unmatched.status).toBe(404);
  const summary = await readStream(await prompt(platform, internId, 'hello there'), 15_000);
  expect(summary.finishReason).toBe('stop');
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

describe('GET /metrics on the gateway', () => {
  it('counts HTTP requests by method, route pattern and status, never by raw URL', async () => {
    const scraped = await eventuallyScraped('gateway', (s) => {
      expect(s.value('interns_http_requests_total', { method: 'POST', route: `${API}/interns`, status: '201' })).toBeGreaterThanOrEqual(1);
      // The chat response is counted when its stream ended, with the status it was sent with.
      expect(s.value('interns_http_requests_total', { method: 'POST', route: CHAT_ROUTE, status: '200' })).toBeGreaterThanOrEqual(1);
    });
    expect(scraped.value('interns_http_requests_total', { method: 'GET', route: `${API}/interns`, status: '200' })).toBeGreaterThanOrEqual(1);
    expect(scraped.value('interns_http_requests_total', { method: 'GET', route: `${API}/interns/:intern_id`, status: '404' })).toBe(1);
    expect(scraped.total('interns_http_requests_total', { route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(scraped.value('interns_http_request_duration_seconds_count', { method: 'POST', route: `${API}/interns` })).toBeGreaterThanOrEqual(1);
    expect(scraped.value('interns_http_request_duration_seconds_sum', { method: 'POST', route: `${API}/interns` })).toBeGreaterThan(0);
    // No label carries an id or a concrete path.
    expect(scraped.text).not.toContain(internId);
    expect(scraped.text).not.toContain('nothing-here');
  });

  it('measures NATS requests by subject without the prefix and by outcome', async () => {
    const scraped = await scrape('gateway');
    const created = { subject: 'lifecycle.cmd.create-intern', outcome: 'ok' };
    expect(scraped.value('interns_nats_request_duration_seconds_count', created)).toBeGreaterThanOrEqual(1);
    expect(scraped.value('interns_nats_request_duration_seconds_sum', created)).toBeGreaterThan(0);
    expect(scraped.value('interns_nats_request_duration_seconds_bucket', { ...created, le: '+Inf' })).toBe(
      scraped.value('interns_nats_request_duration_seconds_count', created),
    );
    expect(
      scraped.value('interns_nats_request_duration_seconds_count', { subject: 'lifecycle.qry.get-intern', outcome: 'refused' }),
    ).toBe(1);
    expect(scraped.value('interns_nats_request_duration_seconds_count', { subject: 'runs.cmd.chat', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    // Refusals are answers: nothing failed on the way.
    expect(scraped.total('interns_nats_request_errors_total')).toBe(0);
    expect(scraped.text).not.toContain(platform.env.NATS_PREFIX);
  });

  it('shows no chat stream left open once the chat ended, and how it ended', async () => {
    await eventuallyScraped('gateway', (s) => {
      expect(s.value('interns_chat_streams_active')).toBe(0);
      expect(s.value('interns_chat_stream_endings_total', { outcome: 'done' })).toBeGreaterThanOrEqual(1);
    });
  });
});

describe('GET /metrics on the services', () => {
  it('lifecycle: handled requests, provisioning step durations for all four steps, its requests to runs', async () => {
    const scraped = await scrape('lifecycle');
    expect(scraped.value('interns_nats_handled_total', { subject: 'lifecycle.cmd.create-intern', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(scraped.value('interns_nats_handled_total', { subject: 'lifecycle.qry.get-intern', outcome: 'refused' })).toBe(1);
    expect(scraped.value('interns_nats_handler_duration_seconds_count', { subject: 'lifecycle.cmd.create-intern' })).toBeGreaterThanOrEqual(1);
    for (const step of PROVISIONING_STEPS) {
      const labels = { step, outcome: 'done' };
      expect(scraped.value('interns_provisioning_step_duration_seconds_count', labels)).toBeGreaterThanOrEqual(1);
      expect(scraped.value('interns_provisioning_step_duration_seconds_sum', labels)).toBeGreaterThanOrEqual(0);
    }
    expect(scraped.total('interns_provisioning_step_duration_seconds_count', { outcome: 'failed' })).toBe(0);
    expect(scraped.value('interns_nats_request_duration_seconds_count', { subject: 'runs.cmd.runtime-boot', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(scraped.value('interns_http_requests_total', { method: 'GET', route: '/health/ready', status: '200' })).toBeGreaterThanOrEqual(1);
  });

  it('lifecycle and runs: the outbox relay published and its lag falls back to 0 once caught up', async () => {
    for (const service of ['lifecycle', 'runs'] as const) {
      await eventuallyScraped(
        service,
        (s) => {
          expect(s.value('interns_outbox_events_published_total', { relay: service })).toBeGreaterThanOrEqual(1);
          expect(s.value('interns_outbox_relay_lag_seconds', { relay: service })).toBe(0);
        },
        30_000,
      );
    }
  });

  it('runs: run durations, open questions, active runs and the chat it handled', async () => {
    const scraped = await eventuallyScraped('runs', (s) => {
      expect(s.total('interns_run_duration_seconds_count')).toBeGreaterThanOrEqual(1);
    });
    expect(scraped.value('interns_run_duration_seconds_count', { ending: 'stop' })).toBeGreaterThanOrEqual(1);
    expect(scraped.value('interns_questions_open')).toBe(0);
    expect(scraped.value('interns_runs_active')).toBe(0);
    expect(scraped.value('interns_nats_handled_total', { subject: 'runs.cmd.chat', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(scraped.value('interns_nats_handled_total', { subject: 'runs.cmd.runtime-boot', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
    expect(scraped.value('interns_nats_request_duration_seconds_count', { subject: 'lifecycle.qry.get-intern', outcome: 'ok' })).toBeGreaterThanOrEqual(1);
  });

  it('analytics: the service, its HTTP requests and the process metrics', async () => {
    const scraped = await scrape('analytics');
    expect(scraped.value('interns_service_info', { service: 'analytics' })).toBe(1);
    expect(scraped.value('interns_http_requests_total', { method: 'GET', route: '/health/ready', status: '200' })).toBeGreaterThanOrEqual(1);
    expect(scraped.find('process_resident_memory_bytes')).toHaveLength(1);
  });

  it('webhooks: the service, its delivery backlog and the process metrics', async () => {
    const scraped = await scrape('webhooks');
    expect(scraped.value('interns_service_info', { service: 'webhooks' })).toBe(1);
    expect(scraped.value('interns_webhook_oldest_pending_delivery_seconds', {})).toBe(0);
    expect(scraped.find('process_resident_memory_bytes')).toHaveLength(1);
  });
});
