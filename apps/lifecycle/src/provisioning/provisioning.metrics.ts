import type { StoredEvent } from '@interns/event-store';
import { histogram, SLOW_WORK_BUCKETS_SECONDS } from '@interns/service-runtime';
import { type ProvisioningStep, provisioningStepBefore } from '@interns/lifecycle-domain';

/**
 * The `step` label of each step, as README documents it (dashboards and alerts know these): older than the
 * step names, and kept when the steps were named like the teardown steps.
 */
export const PROVISIONING_STEP_METRIC_LABELS: Readonly<Record<ProvisioningStep, string>> = {
  disk_prepare: 'prepare_disk',
  hostname_assign: 'assign_hostname',
  runtime_boot: 'boot_runtime',
  health_await: 'await_health',
};

const stepDuration = histogram<'step' | 'outcome'>({
  name: 'interns_provisioning_step_duration_seconds',
  help: 'Provisioning steps from their start to their recorded completion or failure, by step and outcome',
  labelNames: ['step', 'outcome'],
  buckets: SLOW_WORK_BUCKETS_SECONDS,
});

/**
 * When `step` of provisioning attempt `attempt` began, by the event log (upcast): the first step when
 * provisioning started, every later step when the one before it was recorded complete. So the wait for runtime
 * health counts from the boot, and a step that ran again after a crash or a backoff counts from its first start.
 */
export function provisioningStepStartedAt(events: readonly StoredEvent[], attempt: number, step: ProvisioningStep): Date | null {
  const previous = provisioningStepBefore(step);
  for (let i = events.length - 1; i >= 0; i -= 1) {
    const { type, data } = events[i];
    if (data['attempt'] !== attempt) continue;
    const starts =
      previous === null ? type === 'ProvisioningStarted' : type === 'ProvisioningStepCompleted' && data['step'] === previous;
    if (starts) return new Date(String(data['at']));
  }
  return null;
}

/** Records a step whose outcome was just appended at `endedAt` (ISO time of the completion or failure event). */
export function observeProvisioningStep(
  events: readonly StoredEvent[],
  attempt: number,
  step: ProvisioningStep,
  outcome: 'done' | 'failed',
  endedAt: string,
): void {
  const startedAt = provisioningStepStartedAt(events, attempt, step);
  if (startedAt === null || Number.isNaN(startedAt.getTime())) return;
  // Replicas' clocks may differ a little when leadership moved mid-step: never a negative duration.
  const seconds = Math.max(0, (Date.parse(endedAt) - startedAt.getTime()) / 1000);
  stepDuration.observe({ step: PROVISIONING_STEP_METRIC_LABELS[step], outcome }, seconds);
}
