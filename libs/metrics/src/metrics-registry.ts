import {
  collectDefaultMetrics,
  Counter,
  CounterConfiguration,
  Gauge,
  GaugeConfiguration,
  Histogram,
  HistogramConfiguration,
  prometheusContentType,
  Registry,
} from 'prom-client';

/** The one registry of a process: `/metrics` serves it, every module adds its metrics to it. */
export const metricsRegistry = new Registry();

/** `text/plain; version=0.0.4; charset=utf-8`, the Prometheus text exposition format. */
export const METRICS_CONTENT_TYPE = prometheusContentType;

let defaultMetricsOn = false;

/** Process metrics (CPU, memory, event loop, GC); safe to call more than once. */
export function enableDefaultMetrics(): void {
  if (defaultMetricsOn) return;
  defaultMetricsOn = true;
  collectDefaultMetrics({ register: metricsRegistry });
}

type MetricOptions<C> = Omit<C, 'registers'>;
type MetricClass<M> = new (...args: never[]) => M;

// A module may be instantiated more than once per process (tests, several Nest apps), so a metric
// that is already registered under the name is returned instead of throwing "already registered".
function registered<M>(name: string, kind: MetricClass<M>, create: () => M): M {
  const existing = metricsRegistry.getSingleMetric(name);
  if (existing === undefined) return create();
  if (!(existing instanceof kind)) throw new Error(`metric "${name}" is already registered as another type`);
  return existing;
}

export function counter<L extends string = string>(options: MetricOptions<CounterConfiguration<L>>): Counter<L> {
  return registered(options.name, Counter, () => new Counter<L>({ ...options, registers: [metricsRegistry] }));
}

export function histogram<L extends string = string>(
  options: MetricOptions<HistogramConfiguration<L>>,
): Histogram<L> {
  return registered(options.name, Histogram, () => new Histogram<L>({ ...options, registers: [metricsRegistry] }));
}

export function gauge<L extends string = string>(options: MetricOptions<GaugeConfiguration<L>>): Gauge<L> {
  return registered(options.name, Gauge, () => new Gauge<L>({ ...options, registers: [metricsRegistry] }));
}
