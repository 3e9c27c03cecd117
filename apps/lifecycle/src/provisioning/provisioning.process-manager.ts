import type { DataSource, EntityManager } from 'typeorm';
import { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { eventMetadata, type EventMetadata } from '@interns/event-store';
import { InternCommand, InternPresent, nextTeardownStep, RUNTIME_STOPPABLE } from '@interns/lifecycle-domain';
import { describeError, type LeaderLease, WorkerLoop, type WorkerLogger, type WorkSignal } from '@interns/workers';
import type { ChatappInstallsService } from '../chatapp/chatapp-installs.service';
import type { InternStreams, LoadedIntern } from '../interns/intern-streams';
import {
  clearRuntimeActive,
  countProvisioning,
  oldestQueued,
  PendingIntern,
  pendingInterns,
} from './pending-work.queries';
import { runProvisioningStep } from './provisioning-step.runner';
import { RuntimeStopRunner } from './runtime-stop.runner';
import { observeProvisioningStep } from './provisioning.metrics';
import type { RuntimeDriverClient } from './runtime-driver.client';
import { runTeardownStep } from './teardown-step.runner';

export interface ProvisioningProcessManagerOptions {
  dataSource: DataSource;
  lease: LeaderLease;
  streams: InternStreams;
  installs: ChatappInstallsService;
  driver: RuntimeDriverClient;
  signal: WorkSignal;
  /** At most this many interns `provisioning` at once (PROVISION_CONCURRENCY). */
  concurrency: number;
  /** PROVISION_CONCURRENCY_PER_WORKSPACE: provisioning interns, and steps in flight, of one workspace. */
  concurrencyPerWorkspace: number;
  /** PROVISION_STEP_DELAY_MS: a pause before each provisioning step, for demonstrations. */
  stepDelayMs: number;
  internDomain: string;
  healthTimeoutMs: number;
  /** RUNTIME_STOP_ATTEMPTS: refusals of a runtime stop after which the failure is recorded and retries end. */
  stopAttempts: number;
  pollIntervalMs?: number;
  logger?: WorkerLogger;
  now?: () => Date;
}

/** Per intern: the first wait after a failed step, doubled per further failure up to the maximum. */
const FIRST_RETRY_MS = 200;
const MAX_RETRY_MS = 5_000;
/** Steps in flight at once across interns (teardowns and stops are not bounded by PROVISION_CONCURRENCY). */
const MAX_PARALLEL_STEPS = 16;
const SHUTDOWN_GRACE_MS = 2_000;

/**
 * Drives provisioning and teardown step by step (ARCHITECTURE "Domain code"). One leader among the lifecycle
 * replicas (advisory lock) polls the read model every `pollIntervalMs`, and at once when this replica
 * appended. Each tick:
 *  - releases interns still waiting for a chat-app install that is recorded;
 *  - promotes `queued` interns (oldest request first) while fewer than `concurrency` are provisioning;
 *  - starts, per intern with work, one task that loads the stream, runs the current step once through the
 *    idempotent runtime driver and records the outcome through the decider at the loaded version.
 * Nothing but the event log says which step is next, so a crash at any point resumes where the log stands:
 * a step whose completion was recorded never runs again, one cut short runs again (the driver is idempotent).
 * Transient driver failures back off per intern and never fail the intern.
 */
export class ProvisioningProcessManager implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger: WorkerLogger;
  private readonly now: () => Date;
  private readonly worker: WorkerLoop;
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Steps in flight per workspace, so one workspace's teardowns (or stops) cannot take every slot. */
  private readonly inFlightPerWorkspace = new Map<string, number>();
  /** Per intern: earliest time for its next task, and consecutive failures (for the backoff). */
  private readonly notBefore = new Map<string, number>();
  private readonly failures = new Map<string, number>();
  /** Provisioning steps already delayed by `stepDelayMs` (`<id>/<attempt>/<step>`). */
  private readonly delayed = new Set<string>();
  private readonly runtimeStops: RuntimeStopRunner;
  /** Health waits this process started (`<id>/<attempt>`), see ProvisioningStepContext.healthWaitStarts. */
  private readonly healthWaitStarts = new Map<string, Date>();

  constructor(private readonly options: ProvisioningProcessManagerOptions) {
    this.logger = options.logger ?? console;
    this.now = options.now ?? (() => new Date());
    this.runtimeStops = new RuntimeStopRunner(options.driver, options.stopAttempts);
    this.worker = new WorkerLoop({
      name: 'process manager',
      lease: options.lease,
      pollIntervalMs: options.pollIntervalMs ?? 150,
      signal: options.signal,
      logger: this.logger,
      round: async (leader) => {
        await this.tick(leader.manager);
        return 'idle';
      },
      onStopped: () => this.settleInFlight(),
    });
  }

  onApplicationBootstrap(): void {
    this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  start(): void {
    this.worker.start();
  }

  /** Stops polling, gives the steps in flight a moment to record their outcome, then resigns. */
  async stop(): Promise<void> {
    await this.worker.stop();
  }

  get isLeader(): boolean {
    return this.worker.isLeader;
  }

  /** Steps in flight may still record their outcome; one that hangs is simply run again after a restart. */
  private async settleInFlight(): Promise<void> {
    let graceTimer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(this.inFlight.values()),
      new Promise((resolve) => (graceTimer = setTimeout(resolve, SHUTDOWN_GRACE_MS))),
    ]);
    clearTimeout(graceTimer);
  }

  private async tick(manager: EntityManager): Promise<void> {
    await this.releaseOverlooked();
    await this.promoteQueued(manager);
    const pending = await pendingInterns(manager);
    const now = Date.now();
    for (const item of pending) {
      if (this.worker.isStopping || this.inFlight.size >= MAX_PARALLEL_STEPS) break;
      if (this.inFlight.has(item.id) || (this.notBefore.get(item.id) ?? 0) > now) continue;
      if ((this.inFlightPerWorkspace.get(item.workspaceId) ?? 0) >= this.options.concurrencyPerWorkspace) continue;
      this.launch(item);
    }
    this.forgetSettled(new Set(pending.map((item) => item.id)));
  }

  private async releaseOverlooked(): Promise<void> {
    for (const internId of await this.options.installs.overlooked()) {
      await this.options.installs.release(internId, `process-manager-${internId}`);
    }
  }

  /** Oldest request first, while provisioning slots are free. */
  private async promoteQueued(manager: EntityManager): Promise<void> {
    const free = this.options.concurrency - (await countProvisioning(manager));
    if (free <= 0) return;
    for (const internId of await oldestQueued(manager, free, this.options.concurrencyPerWorkspace)) {
      await this.options.streams.execute(
        internId,
        (): InternCommand => ({ type: 'StartProvisioning', data: { at: this.now().toISOString() } }),
        systemMetadata,
      );
    }
  }

  private launch(item: PendingIntern): void {
    const task = this.advance(item)
      .then((deferMs) => {
        this.failures.delete(item.id);
        if (deferMs === null) this.notBefore.delete(item.id);
        else this.notBefore.set(item.id, Date.now() + deferMs);
      })
      .catch((error: unknown) => {
        const failures = (this.failures.get(item.id) ?? 0) + 1;
        this.failures.set(item.id, failures);
        const wait = Math.min(FIRST_RETRY_MS * 2 ** (failures - 1), MAX_RETRY_MS);
        this.notBefore.set(item.id, Date.now() + wait);
        this.logger.warn(`process manager: intern ${item.id} (${item.status}): ${describeError(error)}; again in ${wait} ms`);
      })
      .finally(() => {
        this.inFlight.delete(item.id);
        const left = (this.inFlightPerWorkspace.get(item.workspaceId) ?? 1) - 1;
        if (left > 0) this.inFlightPerWorkspace.set(item.workspaceId, left);
        else this.inFlightPerWorkspace.delete(item.workspaceId);
        this.worker.wake();
      });
    this.inFlight.set(item.id, task);
    this.inFlightPerWorkspace.set(item.workspaceId, (this.inFlightPerWorkspace.get(item.workspaceId) ?? 0) + 1);
  }

  /** One step for one intern, decided on its freshly loaded stream. Resolves to a deferral in ms, or null. */
  private async advance(item: PendingIntern): Promise<number | null> {
    const loaded = await this.options.streams.load(item.id);
    const { state } = loaded;
    if (state.kind !== 'present') return null;
    if (state.status === 'provisioning') return this.provisioningStep(loaded, state);
    if (state.status === 'destroying') return this.teardownStep(loaded, state);
    if (item.runtimeActive && RUNTIME_STOPPABLE.has(state.status)) return this.stopRuntime(loaded, state);
    return null;
  }

  private async provisioningStep(loaded: LoadedIntern, intern: InternPresent): Promise<number | null> {
    const { attempt } = intern;
    const step = intern.provisioningStep;
    if (step === null) return null;
    await this.delayStep(`${intern.id}/${attempt}/${step}`);
    const outcome = await runProvisioningStep(
      {
        driver: this.options.driver,
        internDomain: this.options.internDomain,
        healthTimeoutMs: this.options.healthTimeoutMs,
        healthWaitStarts: this.healthWaitStarts,
        now: this.now,
      },
      intern,
      loaded.events,
      correlationOf(loaded),
    );
    if (outcome.kind === 'again') return outcome.afterMs;
    const at = this.now().toISOString();
    const recorded = await this.options.streams.execute(
      intern.id,
      (): InternCommand =>
        outcome.kind === 'done'
          ? { type: 'CompleteProvisioningStep', data: { attempt, step, hostname: outcome.hostname, at } }
          : { type: 'FailProvisioning', data: { attempt, step, message: outcome.message, at } },
      systemMetadata,
    );
    // Only what was appended counts: a stale attempt or a step recorded meanwhile produces no events.
    if (recorded.length > 0) observeProvisioningStep(loaded.events, attempt, step, outcome.kind, at);
    return null;
  }

  private async teardownStep(loaded: LoadedIntern, intern: InternPresent): Promise<number | null> {
    const step = nextTeardownStep(intern);
    if (step === null) return null;
    const outcome = await runTeardownStep(this.options.driver, intern.id, step, correlationOf(loaded));
    const at = this.now().toISOString();
    await this.options.streams.execute(
      intern.id,
      (): InternCommand =>
        outcome.kind === 'done'
          ? { type: 'CompleteTeardownStep', data: { step, at } }
          : { type: 'FailTeardown', data: { step, message: outcome.message, at } },
      systemMetadata,
      outcome.kind === 'done' && outcome.inTransaction ? { inTransaction: outcome.inTransaction } : {},
    );
    return null;
  }

  /**
   * A suspended or failed intern whose runtime was booted: stop it (RuntimeStopRunner), then clear the flag,
   * only if nothing happened to the intern meanwhile (a new provision keeps it set). When the runner gives up,
   * the failure is recorded on the intern (RuntimeStopFailed), which takes it off the to-do list.
   */
  private async stopRuntime(loaded: LoadedIntern, intern: InternPresent): Promise<number | null> {
    const outcome = await this.runtimeStops.run(intern.id, correlationOf(loaded));
    if (outcome.kind === 'stopped') {
      await clearRuntimeActive(this.options.dataSource, intern.id, loaded.version);
      return null;
    }
    const { attempt, message } = outcome;
    const at = this.now().toISOString();
    await this.options.streams.execute(
      intern.id,
      (): InternCommand => ({ type: 'RecordRuntimeStopFailure', data: { attempt, message, at } }),
      systemMetadata,
    );
    this.logger.warn(`process manager: intern ${intern.id}: gave up stopping its runtime after ${attempt} refusals: ${message}`);
    return null;
  }

  private async delayStep(key: string): Promise<void> {
    if (this.options.stepDelayMs <= 0 || this.delayed.has(key)) return;
    this.delayed.add(key);
    await delay(this.options.stepDelayMs);
  }

  /** Drops bookkeeping of interns that have no work left. */
  private forgetSettled(pending: Set<string>): void {
    for (const id of this.notBefore.keys()) if (!pending.has(id)) this.notBefore.delete(id);
    for (const id of this.failures.keys()) if (!pending.has(id)) this.failures.delete(id);
    this.runtimeStops.forgetAllBut(pending);
    for (const key of this.delayed) if (!pending.has(key.slice(0, key.indexOf('/')))) this.delayed.delete(key);
    for (const key of this.healthWaitStarts.keys()) if (!pending.has(key.slice(0, key.indexOf('/')))) this.healthWaitStarts.delete(key);
  }
}

/** The process manager's events carry on the correlation of what caused them; the actor is the system. */
function systemMetadata(loaded: LoadedIntern): EventMetadata {
  const last = loaded.events[loaded.events.length - 1];
  return eventMetadata({ correlationId: correlationOf(loaded), causationId: last?.eventId ?? null, actor: null });
}

function correlationOf(loaded: LoadedIntern): string {
  const last = loaded.events[loaded.events.length - 1];
  return last?.metadata.correlation_id ?? 'process-manager';
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
