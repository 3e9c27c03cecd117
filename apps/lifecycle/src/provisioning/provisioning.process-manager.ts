// Over 300 lines on purpose: one class that performs what nextProvisioningAction decides (the round, the per-intern tasks, their outcomes); the decisions, queries and step runners already live in files of their own.
import type { DataSource, EntityManager } from 'typeorm';
import { OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { eventMetadata, type EventMetadata } from '@interns/event-store';
import type { InternCommand } from '@interns/lifecycle-domain';
import { describeError, type LeaderLease, PerKeyBackoff, WorkerLoop, type WorkerLogger, type WorkSignal } from '@interns/workers';
import type { ChatappInstallsService } from '../interns/chatapp-installs.service';
import type { InternStreams, LoadedIntern } from '../interns/intern-streams';
import {
  clearRuntimeActive,
  countProvisioning,
  oldestQueued,
  PendingIntern,
  pendingInterns,
} from './pending-work.queries';
import { nextProvisioningAction, type ProvisioningAction } from './next-provisioning-action';
import { type ProvisioningStepContext, runProvisioningStep } from './provisioning-step.runner';
import { RuntimeStopRunner } from './runtime-stop.runner';
import { chooseTasks } from './task-choice';
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
  /** The poll while nothing is pending or under way (default QUIET_POLL_MS). */
  quietPollIntervalMs?: number;
  logger?: WorkerLogger;
  now?: () => Date;
}

/** Per intern: the first wait after a failed step, doubled per further failure up to the maximum. */
const RETRY_BACKOFF = { firstMs: 200, maxMs: 5_000 };
/** Steps in flight at once across interns (teardowns and stops are not bounded by PROVISION_CONCURRENCY). */
const MAX_PARALLEL_STEPS = 16;
const SHUTDOWN_GRACE_MS = 2_000;
/**
 * The poll while no intern has provisioning work and no step is in flight. This replica's appends wake the leader
 * at once (WorkSignal); another replica's are seen within this, not within the poll interval. Polling every 150 ms
 * with nothing to do kept an idle lifecycle from ever looking idle to V8 (its heap never shrank: bench:idle).
 */
const QUIET_POLL_MS = 1_000;

/**
 * Drives provisioning and teardown step by step (ARCHITECTURE "Domain code"). One leader among the lifecycle
 * replicas (advisory lock) polls the read model every `pollIntervalMs`, and at once when this replica
 * appended. Each tick:
 *  - releases interns still waiting for a chat-app install that is recorded;
 *  - promotes `queued` interns (oldest request first) while fewer than `concurrency` are provisioning;
 *  - starts, per intern with work (chooseTasks), one task that loads the stream, runs the current step once
 *    through the idempotent runtime driver and records the outcome through the decider at the loaded version.
 * What to run and what to record is decided by nextProvisioningAction; this class performs it (I/O only).
 * Nothing but the event log says which step is next, so a crash at any point resumes where the log stands:
 * a step whose completion was recorded never runs again, one cut short runs again (the driver is idempotent).
 * Transient driver failures back off per intern (PerKeyBackoff) and never fail the intern.
 */
export class ProvisioningProcessManager implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger: WorkerLogger;
  private readonly now: () => Date;
  private readonly worker: WorkerLoop;
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Steps in flight per workspace, so one workspace's teardowns (or stops) cannot take every slot. */
  private readonly inFlightPerWorkspace = new Map<string, number>();
  /** Per intern: earliest time for its next task, after failures or a deferral (health not yet). */
  private readonly backoff = new PerKeyBackoff(RETRY_BACKOFF);
  /** Provisioning steps already delayed by `stepDelayMs` (`<id>/<attempt>/<step>`). */
  private readonly delayed = new Set<string>();
  private readonly runtimeStops: RuntimeStopRunner;
  /** Health waits this process started (`<id>/<attempt>`), see ProvisioningStepContext.healthWaitStarts. */
  private readonly healthWaitStarts = new Map<string, Date>();
  private readonly stepContext: ProvisioningStepContext;

  constructor(private readonly options: ProvisioningProcessManagerOptions) {
    this.logger = options.logger ?? console;
    this.now = options.now ?? (() => new Date());
    this.runtimeStops = new RuntimeStopRunner(options.driver, options.stopAttempts);
    this.stepContext = {
      driver: options.driver,
      internDomain: options.internDomain,
      healthTimeoutMs: options.healthTimeoutMs,
      healthWaitStarts: this.healthWaitStarts,
      now: this.now,
    };
    this.worker = new WorkerLoop({
      name: 'process manager',
      lease: options.lease,
      pollIntervalMs: options.pollIntervalMs ?? 150,
      quietPollIntervalMs: options.quietPollIntervalMs ?? QUIET_POLL_MS,
      signal: options.signal,
      logger: this.logger,
      round: async (leader) => ((await this.tick(leader.manager)) ? 'idle' : 'quiet'),
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

  /** One look at the read model; true when anything is pending or under way (else the next look can wait longer). */
  private async tick(manager: EntityManager): Promise<boolean> {
    const released = await this.releaseOverlooked();
    const promoted = await this.promoteQueued(manager);
    const pending = await pendingInterns(manager);
    const now = Date.now();
    if (!this.worker.isStopping) {
      const chosen = chooseTasks(pending, {
        inFlight: new Set(this.inFlight.keys()),
        inFlightPerWorkspace: this.inFlightPerWorkspace,
        maxParallel: MAX_PARALLEL_STEPS,
        perWorkspace: this.options.concurrencyPerWorkspace,
        isReady: (internId) => this.backoff.isReady(internId, now),
      });
      for (const item of chosen) this.launch(item);
    }
    this.forgetSettled(new Set(pending.map((item) => item.id)));
    return released > 0 || promoted > 0 || pending.length > 0 || this.inFlight.size > 0;
  }

  /** How many interns waiting on a recorded chat-app install were released. */
  private async releaseOverlooked(): Promise<number> {
    const overlooked = await this.options.installs.overlooked();
    for (const internId of overlooked) {
      await this.options.installs.release(internId, `process-manager-${internId}`);
    }
    return overlooked.length;
  }

  /** Oldest request first, while provisioning slots are free; how many were promoted. */
  private async promoteQueued(manager: EntityManager): Promise<number> {
    const free = this.options.concurrency - (await countProvisioning(manager));
    if (free <= 0) return 0;
    const queued = await oldestQueued(manager, free, this.options.concurrencyPerWorkspace);
    for (const internId of queued) {
      await this.options.streams.execute(
        internId,
        (): InternCommand => ({ type: 'StartProvisioning', data: { at: this.now().toISOString() } }),
        systemMetadata,
      );
    }
    return queued.length;
  }

  private launch(item: PendingIntern): void {
    const task = this.advance(item)
      .then((againAfterMs) => this.backoff.succeeded(item.id, Date.now(), againAfterMs))
      .catch((error: unknown) => {
        const wait = this.backoff.failed(item.id, Date.now());
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

  /**
   * One task for one intern, decided by nextProvisioningAction on its freshly loaded stream and performed here.
   * Resolves to a deferral in ms, or null.
   */
  private async advance(item: PendingIntern): Promise<number | null> {
    const loaded = await this.options.streams.load(item.id);
    const work = nextProvisioningAction({ kind: 'loaded', intern: loaded.state, runtimeActive: item.runtimeActive });
    return this.perform(work, item.id, loaded);
  }

  private async perform(action: ProvisioningAction, internId: string, loaded: LoadedIntern): Promise<number | null> {
    switch (action.kind) {
      case 'nothing':
        return null;
      case 'check_again':
        return action.afterMs;
      case 'run_provisioning_step': {
        const { intern, attempt, step } = action;
        await this.delayStep(`${intern.id}/${attempt}/${step}`);
        const outcome = await runProvisioningStep(this.stepContext, intern, loaded.events, correlationOf(loaded));
        const fact = { kind: 'provisioning_step_ran', attempt, step, outcome, at: this.at() } as const;
        return this.perform(nextProvisioningAction(fact), internId, loaded);
      }
      case 'run_teardown_step': {
        const { step } = action;
        const outcome = await runTeardownStep(this.options.driver, action.internId, step, correlationOf(loaded));
        const fact = { kind: 'teardown_step_ran', step, outcome, at: this.at() } as const;
        return this.perform(nextProvisioningAction(fact), internId, loaded);
      }
      case 'stop_runtime': {
        // RuntimeStopRunner throws StopRefused below its attempt limit (the task fails and backs off); once it gives
        // up, the recorded RuntimeStopFailed takes the intern off the to-do list.
        const outcome = await this.runtimeStops.run(action.internId, correlationOf(loaded));
        const fact = { kind: 'runtime_stop_ran', outcome, revision: loaded.version, at: this.at() } as const;
        return this.perform(nextProvisioningAction(fact), internId, loaded);
      }
      case 'record_provisioning_step': {
        const { command, attempt, step, outcome } = action;
        const recorded = await this.options.streams.execute(internId, () => command, systemMetadata);
        // Only what was appended counts: a stale attempt or a step recorded meanwhile produces no events.
        if (recorded.length > 0) observeProvisioningStep(loaded.events, attempt, step, outcome, command.data.at);
        return null;
      }
      case 'record_teardown_step':
        await this.options.streams.execute(
          internId,
          () => action.command,
          systemMetadata,
          action.inTransaction ? { inTransaction: action.inTransaction } : {},
        );
        return null;
      case 'clear_runtime_active':
        await clearRuntimeActive(this.options.dataSource, internId, action.revision);
        return null;
      case 'record_runtime_stop_failure':
        await this.options.streams.execute(internId, () => action.command, systemMetadata);
        this.logger.warn(`process manager: intern ${internId}: ${action.warning}`);
        return null;
      default:
        return assertNever(action);
    }
  }

  private at(): string {
    return this.now().toISOString();
  }

  private async delayStep(key: string): Promise<void> {
    if (this.options.stepDelayMs <= 0 || this.delayed.has(key)) return;
    this.delayed.add(key);
    await delay(this.options.stepDelayMs);
  }

  /** Drops bookkeeping of interns that have no work left. */
  private forgetSettled(pending: Set<string>): void {
    this.backoff.forgetAllBut(pending);
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

function assertNever(value: never): never {
  throw new Error(`unknown provisioning action ${JSON.stringify(value)}`);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
