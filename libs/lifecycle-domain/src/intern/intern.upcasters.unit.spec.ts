import { stateFrom } from './intern.decider';
import type { InternEvent } from './intern.events';
import { INTERN_EVENT_UPCASTERS } from './intern.upcasters';

const at = '2026-11-21T12:00:00.000Z';

/** Applies the upcasters the way the event store's chain does: every matching one from the stored version on. */
function upcast(type: string, schemaVersion: number, data: Record<string, unknown>): Record<string, unknown> {
  let lifted = data;
  for (let version = schemaVersion; ; version += 1) {
    const next = INTERN_EVENT_UPCASTERS.find((upcaster) => upcaster.type === type && upcaster.fromVersion === version);
    if (!next) return lifted;
    lifted = next.upcast(lifted);
  }
}

describe('intern event upcasters', () => {
  it('names the numbered steps of stored version 1 provisioning events', () => {
    expect([1, 2, 3, 4].map((step) => upcast('ProvisioningStepCompleted', 1, { attempt: 1, step, hostname: null, at }).step)).toEqual([
      'disk_prepare',
      'hostname_assign',
      'runtime_boot',
      'health_await',
    ]);
    const failed = { attempt: 2, step: 3, message: 'no provider', at };
    expect(upcast('ProvisioningFailed', 1, failed)).toEqual({ ...failed, step: 'runtime_boot' });
    expect(failed.step).toBe(3);
  });

  it('leaves a step that already has its name, and other event types, as they are', () => {
    const named = { attempt: 1, step: 'runtime_boot', hostname: null, at };
    expect(upcast('ProvisioningStepCompleted', 1, named)).toBe(named);
    const suspended = { at };
    expect(upcast('InternSuspended', 1, suspended)).toBe(suspended);
  });

  it('makes a history stored before the names a running intern again', () => {
    const stored: { type: string; data: Record<string, unknown> }[] = [
      {
        type: 'InternCreated',
        data: {
          internId: 'i-1', organizationId: 'o', workspaceId: 'w', createdBy: null, name: 'ada', description: null,
          instructions: null, model: null, vaultId: 'v', attachedVaultId: null, iconSha256: 'ab', at,
        },
      },
      { type: 'ProvisionRequested', data: { attempt: 1, at } },
      { type: 'ProvisioningStarted', data: { attempt: 1, at } },
      ...[1, 2, 3, 4].map((step) => ({
        type: 'ProvisioningStepCompleted',
        data: { attempt: 1, step, hostname: step === 2 ? 'ada-1.interns.localhost' : null, at },
      })),
    ];
    const events = stored.map(({ type, data }) => ({ type, data: upcast(type, 1, data) }) as InternEvent);
    expect(stateFrom(events)).toMatchObject({ status: 'running', hostname: 'ada-1.interns.localhost', provisioningStep: null });
  });
});
