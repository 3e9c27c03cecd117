import type { StoredEvent } from '@interns/event-store';
import type { InternPresent } from '@interns/lifecycle-domain';
import { internHostname } from './hostname';
import type { RuntimeDriverClient } from './runtime-driver.client';

export type ProvisioningStepOutcome =
  | { kind: 'done'; hostname: string | null }
  | { kind: 'failed'; message: string }
  /** The runtime is not healthy yet, and the wait is still within its bound: ask again later. */
  | { kind: 'again'; afterMs: number };

export const BOOT_STEP = 3;
export const HEALTH_STEP = 4;
const HEALTH_POLL_MS = 200;

export interface ProvisioningStepContext {
  driver: RuntimeDriverClient;
  internDomain: string;
  healthTimeoutMs: number;
  now: () => Date;
}

/**
 * Runs the current provisioning step of `intern` (status `provisioning`) once; the caller records the
 * outcome through the decider. Transient driver failures propagate as TransientDriverError.
 */
export async function runProvisioningStep(
  context: ProvisioningStepContext,
  intern: InternPresent,
  events: StoredEvent[],
  correlationId: string,
): Promise<ProvisioningStepOutcome> {
  const request = { internId: intern.id, correlationId };
  switch (intern.provisioningStep) {
    case 1: {
      const reply = await context.driver.prepareDisk(request);
      return reply.ok ? { kind: 'done', hostname: null } : { kind: 'failed', message: reply.message };
    }
    case 2:
      // Naming needs no runtime: the hostname is recorded with the step's completion.
      return { kind: 'done', hostname: internHostname(intern.name, intern.id, context.internDomain) };
    case BOOT_STEP: {
      const hostname = intern.hostname ?? internHostname(intern.name, intern.id, context.internDomain);
      const reply = await context.driver.boot({ ...request, model: intern.model, hostname });
      return reply.ok ? { kind: 'done', hostname: null } : { kind: 'failed', message: reply.message };
    }
    case HEALTH_STEP: {
      const reply = await context.driver.health(request);
      if (!reply.ok) return { kind: 'failed', message: reply.message };
      if (reply.healthy) return { kind: 'done', hostname: null };
      // Bounded from when the boot was recorded, so a restart does not grant the wait again.
      const waitingSince = bootRecordedAt(events, intern.attempt) ?? context.now();
      if (context.now().getTime() - waitingSince.getTime() >= context.healthTimeoutMs) {
        const seconds = Math.round(context.healthTimeoutMs / 100) / 10;
        return { kind: 'failed', message: `runtime did not become healthy within ${seconds} s: ${reply.detail}` };
      }
      return { kind: 'again', afterMs: HEALTH_POLL_MS };
    }
    default:
      throw new Error(`intern ${intern.id} is provisioning at no known step (${intern.provisioningStep})`);
  }
}

function bootRecordedAt(events: StoredEvent[], attempt: number): Date | null {
  for (let i = events.length - 1; i >= 0; i -= 1) {
    const event = events[i];
    if (
      event?.type === 'ProvisioningStepCompleted' &&
      event.data['attempt'] === attempt &&
      event.data['step'] === BOOT_STEP
    ) {
      return new Date(String(event.data['at']));
    }
  }
  return null;
}
