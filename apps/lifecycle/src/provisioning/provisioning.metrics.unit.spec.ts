import { randomUUID } from 'node:crypto';
import type { Histogram } from 'prom-client';
import type { StoredEvent } from '@interns/event-store';
import { PROVISIONING_STEPS } from '@interns/lifecycle-domain';
import { metricsRegistry } from '@interns/service-runtime';
import { observeProvisioningStep, PROVISIONING_STEP_METRIC_LABELS, provisioningStepStartedAt } from './provisioning.metrics';

let position = 0;
function event(type: string, data: Record<string, unknown>): StoredEvent {
  position += 1;
  return {
    globalPosition: String(position),
    transactionId: String(position),
    streamId: 'intern-1',
    streamType: 'intern',
    streamVersion: position,
    eventId: randomUUID(),
    type,
    schemaVersion: 1,
    data,
    metadata: { correlation_id: 'c', causation_id: null, actor: null },
    createdAt: new Date(),
  };
}

const T0 = '2030-01-01T00:00:00.000Z';
const T1 = '2030-01-01T00:00:01.500Z';
const T2 = '2030-01-01T00:00:04.000Z';

/** A first attempt that failed at step 2, then a second attempt through step 1. */
const history = [
  event('ProvisionRequested', { attempt: 1, at: T0 }),
  event('ProvisioningStarted', { attempt: 1, at: T0 }),
  event('ProvisioningStepCompleted', { attempt: 1, step: 'disk_prepare', hostname: null, at: T0 }),
  event('ProvisioningFailed', { attempt: 1, step: 'hostname_assign', message: 'no', at: T0 }),
  event('ProvisionRequested', { attempt: 2, at: T1 }),
  event('ProvisioningStarted', { attempt: 2, at: T1 }),
  event('ProvisioningStepCompleted', { attempt: 2, step: 'disk_prepare', hostname: null, at: T2 }),
];

async function stepSeries(): Promise<Map<string, number>> {
  const metric = metricsRegistry.getSingleMetric('interns_provisioning_step_duration_seconds') as Histogram | undefined;
  if (metric === undefined) throw new Error('the provisioning step histogram is not registered');
  const { values } = await metric.get();
  return new Map(values.map((value) => [`${value.metricName}{${value.labels.step},${value.labels.outcome}}`, value.value]));
}

describe('provisioning step metrics', () => {
  it('labels the four contract steps as README documents them', () => {
    expect(PROVISIONING_STEPS.map((step) => PROVISIONING_STEP_METRIC_LABELS[step])).toEqual([
      'prepare_disk',
      'assign_hostname',
      'boot_runtime',
      'await_health',
    ]);
  });

  it('starts the first step when the attempt started provisioning and later steps when the previous one completed', () => {
    expect(provisioningStepStartedAt(history, 2, 'disk_prepare')).toEqual(new Date(T1));
    expect(provisioningStepStartedAt(history, 2, 'hostname_assign')).toEqual(new Date(T2));
    expect(provisioningStepStartedAt(history, 1, 'hostname_assign')).toEqual(new Date(T0));
  });

  it('knows no start for a step whose predecessor is not recorded in that attempt', () => {
    expect(provisioningStepStartedAt(history, 2, 'runtime_boot')).toBeNull();
    expect(provisioningStepStartedAt(history, 3, 'disk_prepare')).toBeNull();
  });

  it('observes the time from the start to the recorded outcome, under the step label and outcome', async () => {
    observeProvisioningStep(history, 2, 'hostname_assign', 'done', '2030-01-01T00:00:06.500Z');
    observeProvisioningStep(history, 2, 'runtime_boot', 'failed', T2);
    const series = await stepSeries();
    expect(series.get('interns_provisioning_step_duration_seconds_count{assign_hostname,done}')).toBe(1);
    expect(series.get('interns_provisioning_step_duration_seconds_sum{assign_hostname,done}')).toBeCloseTo(2.5, 6);
    // The boot of attempt 2 has no recorded start: nothing is observed rather than a made-up duration.
    expect(series.has('interns_provisioning_step_duration_seconds_count{boot_runtime,failed}')).toBe(false);
  });
});
