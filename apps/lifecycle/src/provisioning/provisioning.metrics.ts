import type { StoredEvent } from '@interns/event-store';
import { histogram, SLOW_WORK_BUCKETS_SECONDS } from '@interns/health';
import { PROVISIONING_TOTAL_STEPS } from '@interns/lifecycle-domain';

/** The `step` label: stable slugs of the contract's provisioning steps 1-4 (PROVISIONING_STEPS), in order. */
export const PROVISIONING_STEP_SLUGS = ['prepare_disk', 'assign_hostname', 'boot_runtime', 'await_health'] as const satisfies {
  length: typeof PROVISIONING_TOTAL_STEPS;
};

export type ProvisioningStepSlug = (typeof PROVISIONING_STEP_SLUGS)[number];

const stepDuration = histogram<'step' | 'outcome'>({
  name: 'interns_provisioning_step_duration_seconds',
  help: 'Provisioning steps from their start to their recorded completion or failure, by step and outcome',
  labelNames: ['step', 'outcome'],
  buckets: SLOW_WORK_BUCKETS_SECONDS,
});

export function provisioningStepSlug(step: number): ProvisioningStepSlug | null {
  return PROVISIONING_STEP_SLUGS[step - 1] ?? null;
}

/**
 * When step `step` of provisioning attempt `attempt` began, by the event log: step 1 when provisioning
 * started, every later step when the one before it was recorded complete. So the wait for runtime health
 * counts from the boot, and a step that ran again after a crash or a backoff counts from its first start.
 */
export function provisioningStepStartedAt(events: readonly StoredEvent[], attempt: number, step: number): Date | null {
  for (let i = events.length - 1; i >= 0; i -= 1) {
    const { type, data } = events[i];
    if (data['attempt'] !== attempt) continue;
    const starts =
      step === 1 ? type === 'ProvisioningStarted' : type === 'ProvisioningStepCompleted' && data['step'] === step - 1;
    if (starts) return new Date(String(data['at']));
  }
  return null;
}

/** Records a step whose outcome was just appended at `endedAt` (ISO time of the completion or failure event). */
export function observeProvisioningStep(
  events: readonly StoredEvent[],
  attempt: number,
  step: number,
  outcome: 'done' | 'failed',
  endedAt: string,
): void {
  const slug = provisioningStepSlug(step);
  const startedAt = provisioningStepStartedAt(events, attempt, step);
  if (slug === null || startedAt === null || Number.isNaN(startedAt.getTime())) return;
  // Replicas' clocks may differ a little when leadership moved mid-step: never a negative duration.
  const seconds = Math.max(0, (Date.parse(endedAt) - startedAt.getTime()) / 1000);
  stepDuration.observe({ step: slug, outcome }, seconds);
}
