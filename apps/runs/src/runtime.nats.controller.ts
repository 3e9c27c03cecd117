import { Controller, Inject, Logger, Type } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type {
  RuntimeArchiveResult,
  RuntimeBootRequest,
  RuntimeEndRunsRequest,
  RuntimeHealthReply,
  RuntimeRequest,
  RuntimeStepReply,
  Subjects,
} from '@interns/contracts';
import { RunHost } from './runs/run-host';
import { TerminalHost } from './terminals/terminal-host';
import { RUNTIME_DRIVER } from './runtime/runtime-driver';
import type { RuntimeDriver } from './runtime/runtime-driver';

/**
 * Lifecycle's way to the runtime driver. A definitive step failure is answered `{ ok: false, message }`;
 * any other error propagates, so the caller gets an error reply, treats it as transient and retries.
 * Built in a factory because the subjects carry NATS_PREFIX (see pingNatsController).
 */
export function runtimeNatsController(subjects: Subjects['runs']): Type<unknown> {
  @Controller()
  class RuntimeNatsController {
    private readonly logger = new Logger('Runtime');

    constructor(
      @Inject(RUNTIME_DRIVER) private readonly driver: RuntimeDriver,
      @Inject(RunHost) private readonly runs: RunHost,
      @Inject(TerminalHost) private readonly terminals: TerminalHost,
    ) {}

    @MessagePattern(subjects.runtimePrepareDisk)
    async prepareDisk(@Payload() request: RuntimeRequest): Promise<RuntimeStepReply> {
      return this.report('prepare disk', request, await this.driver.prepareDisk(request.internId));
    }

    @MessagePattern(subjects.runtimeBoot)
    async boot(@Payload() request: RuntimeBootRequest): Promise<RuntimeStepReply> {
      const { internId, model, hostname } = request;
      return this.report('boot', request, await this.driver.boot({ internId, model: model ?? null, hostname }));
    }

    /** Answered like every step, `{ ok: true, healthy, detail }`: an unhealthy runtime is not a failed call. */
    @MessagePattern(subjects.runtimeHealth)
    async health(@Payload() request: RuntimeRequest): Promise<RuntimeStepReply<RuntimeHealthReply>> {
      return { ok: true, ...(await this.driver.health(request.internId)) };
    }

    @MessagePattern(subjects.runtimeStop)
    async stop(@Payload() request: RuntimeRequest): Promise<RuntimeStepReply> {
      const reply = await this.driver.stop(request.internId);
      // Once the runtime is recorded stopped no terminal opens; one that opened since end-runs closes here.
      await this.terminals.closeIntern(request.internId, 'intern_suspended');
      return this.report('stop', request, reply);
    }

    /**
     * Ends the intern's going runs on every replica (clients attached to them get 410 `run_ended`), and its terminals
     * wherever they are held.
     */
    @MessagePattern(subjects.runtimeEndRuns)
    async endRuns(@Payload() request: RuntimeEndRunsRequest): Promise<RuntimeStepReply> {
      const reason = request.reason ?? 'intern_suspended';
      await Promise.all([this.runs.endRunsOf(request.internId, reason, request.correlationId), this.terminals.closeIntern(request.internId, reason)]);
      return this.report('end runs', request, await this.driver.endRuns(request.internId));
    }

    @MessagePattern(subjects.runtimeArchive)
    async archive(@Payload() request: RuntimeRequest): Promise<RuntimeStepReply<RuntimeArchiveResult>> {
      return this.report('archive', request, await this.driver.archive(request.internId));
    }

    @MessagePattern(subjects.runtimeRemoveDisk)
    async removeDisk(@Payload() request: RuntimeRequest): Promise<RuntimeStepReply> {
      return this.report('remove disk', request, await this.driver.removeDisk(request.internId));
    }

    private report<T extends RuntimeStepReply<object>>(step: string, request: RuntimeRequest, reply: T): T {
      if (!reply.ok) {
        this.logger.warn(
          `${step} of intern ${request.internId} failed: ${reply.message} (correlation ${request.correlationId})`,
        );
      }
      return reply;
    }
  }
  return RuntimeNatsController;
}
