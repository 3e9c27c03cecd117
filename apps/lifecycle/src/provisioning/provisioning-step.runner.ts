import type { StoredEvent } from '@interns/event-store';
import type { InternPresent, ProvisioningStep } from '@interns/lifecycle-domain';
import { internHostname } from './hostname';
import type { RuntimeDriverClient } from './runtime-driver.client';

export type ProvisioningStepOutcome =
  | { kind: 'done'; hostname: string | null }
  | { kind: 'failed'; message: string }
  /** The runtime is not healthy yet, and the wait is still within its bound: ask again later. */
  | { kind: 'again'; afterMs: number };

const HEALTH_POLL_MS = 200;

export interface ProvisioningStepContext {
  driver: RuntimeDriverClient;
  internDomain: string;
  healthTimeoutMs: number;
  /**
   * When this process first checked the health of an attempt (`<intern id>/<attempt>`): the health wait counts
   * from there, so a lifecycle that was down longer than the timeout still gives the runtime its full wait
   * instead of failing it at the first check after the restart.
   */
  healthWaitStarts: Map<string, Date>;
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
  const step: ProvisioningStep | null = intern.provisioningStep;
  switch (step) {
    case 'disk_prepare': {
      const reply = await context.driver.prepareDisk(request);
      return reply.ok ? { kind: 'done', hostname: null } : { kind: 'failed', message: reply.message };
    }
    case 'hostname_assign':
      // Naming needs no runtime: the hostname is recorded with the step's completion.
      return { kind: 'done', hostname: internHostname(intern.name, intern.id, context.internDomain) };
    case 'runtime_boot': {
      const hostname = intern.hostname ?? internHostname(intern.name, intern.id, context.internDomain);
      const reply = await context.driver.boot({ ...request, model: intern.model, hostname });
      return reply.ok ? { kind: 'done', hostname: null } : { kind: 'failed', message: reply.message };
    }
    case 'health_await': {
      const waitKey = healthWaitKey(intern.id, intern.attempt);
      const checkedAt = context.now();
      const reply = await context.driver.health(request);
      if (!reply.ok) return { kind: 'failed', message: reply.message };
      if (reply.healthy) return { kind: 'done', hostname: null };
      // The runtime cannot have been checked before its boot was recorded; the restart rule is on the context.
      const firstCheck = context.healthWaitStarts.get(waitKey) ?? laterOf(checkedAt, bootRecordedAt(events, intern.attempt));
      context.healthWaitStarts.set(waitKey, firstCheck);
      if (context.now().getTime() - firstCheck.getTime() >= context.healthTimeoutMs) {
        const seconds = Math.round(context.healthTimeoutMs / 100) / 10;
        return { kind: 'failed', message: `runtime did not become healthy within ${seconds} s: ${reply.detail}` };
      }
      return { kind: 'again', afterMs: HEALTH_POLL_MS };
    }
    case null:
      throw new Error(`intern ${intern.id} is provisioning at no step`);
    default:
      return assertNever(step);
  }
}

/** The key of `ProvisioningStepContext.healthWaitStarts`. */
export function healthWaitKey(internId: string, attempt: number): string {
  return `${internId}/${attempt}`;
}

function laterOf(a: Date, b: Date | null): Date {
  return b !== null && b.getTime() > a.getTime() ? b : a;
}

function bootRecordedAt(events: StoredEvent[], attempt: number): Date | null {
  for (let i = events.length - 1; i >= 0; i -= 1) {
    const event = events[i];
    if (
      event?.type === 'ProvisioningStepCompleted' &&
      event.data['attempt'] === attempt &&
      event.data['step'] === 'runtime_boot'
    ) {
      return new Date(String(event.data['at']));
    }
  }
  return null;
}

function assertNever(value: never): never {
  throw new Error(`unknown provisioning step ${String(value)}`);
}
