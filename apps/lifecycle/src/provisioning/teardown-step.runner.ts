import type { EntityManager } from 'typeorm';
import type { TeardownStep } from '@interns/lifecycle-domain';
import type { RuntimeDriverClient } from './runtime-driver.client';

export type TeardownStepOutcome =
  | {
      kind: 'done';
      /** Local side effect, committed with the step's completion so it happens exactly once. */
      inTransaction?: (manager: EntityManager) => Promise<void>;
    }
  | { kind: 'failed'; message: string };

/**
 * Runs one teardown step of an intern in `destroying`; the caller records the outcome through the decider.
 * Transient driver failures propagate as TransientDriverError.
 */
export async function runTeardownStep(
  driver: RuntimeDriverClient,
  internId: string,
  step: TeardownStep,
  correlationId: string,
): Promise<TeardownStepOutcome> {
  const request = { internId, correlationId };
  switch (step) {
    case 'runs_end':
      return verdict(await driver.endRuns({ ...request, reason: 'intern_deleted' }));
    case 'runtime_stop':
      return verdict(await driver.stop(request));
    case 'workspace_archive':
      return verdict(await driver.archive(request));
    case 'vault_remove':
      return {
        kind: 'done',
        inTransaction: async (manager) => {
          // The intern's vault goes with its secrets (interface section 18): sealed values, hosts and fingerprints.
          await manager.query(
            `DELETE FROM lifecycle.vault_secrets WHERE scope = 'intern' AND vault_id IN (SELECT id FROM lifecycle.vaults WHERE owner_intern_id = $1)`,
            [internId],
          );
          await manager.query(`DELETE FROM lifecycle.vaults WHERE owner_intern_id = $1`, [internId]);
        },
      };
    case 'disk_remove': {
      // The last step: a deleted intern's transcripts, run chunks and egress log go before its teardown completes
      // (CONTRACT section 22). Every call is idempotent, so the step repeated after a failure or a crash is harmless.
      const purged = await driver.purgeTranscripts(request);
      if (!purged.ok) return verdict(purged);
      const egressPurged = await driver.purgeEgressLog(request);
      if (!egressPurged.ok) return verdict(egressPurged);
      return verdict(await driver.removeDisk(request));
    }
    default:
      return assertNever(step);
  }
}

function verdict(reply: { ok: true } | { ok: false; message: string }): TeardownStepOutcome {
  return reply.ok ? { kind: 'done' } : { kind: 'failed', message: reply.message };
}

function assertNever(value: never): never {
  throw new Error(`unknown teardown step ${String(value)}`);
}
