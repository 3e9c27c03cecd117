import type { NatsConnection } from '@nats-io/transport-node';
import type {
  RuntimeArchiveResult,
  RuntimeBootRequest,
  RuntimeEndRunsRequest,
  RuntimeHealthReply,
  RuntimeRequest,
  RuntimeStepReply,
  Subjects,
} from '@interns/contracts';
import { RpcClient } from '@interns/messaging';

/** No answer, a late one, or a fault that is not the step's verdict: retry the step, never fail the intern. */
export class TransientDriverError extends Error {
  override readonly name = 'TransientDriverError';
}

/** Most steps are quick; archiving and removing a workspace copy files, so they get longer. */
const STEP_TIMEOUT_MS = 10_000;
const FILE_STEP_TIMEOUT_MS = 60_000;
/**
 * Beyond ARCHIVE_TIMEOUT_MS: the runs side answers a late archive with its failure by then, so the step is not
 * retried (a second archive of the same workspace) while the first still runs.
 */
const ARCHIVE_ANSWER_MARGIN_MS = 30_000;

/**
 * The runs service's runtime driver over NATS. Every call is idempotent on the runs side, so a retried step
 * (after a timeout or a crash) takes effect once. `{ok:false}` is the step's definitive failure.
 */
export class RuntimeDriverClient {
  private readonly rpc: RpcClient;

  constructor(
    nc: NatsConnection,
    private readonly subjects: Subjects['runs'],
    private readonly archiveTimeoutMs: number,
    /** The egress service's purge of a deleted intern's egress log (interface section 19), asked in the same step. */
    private readonly egressPurgeSubject: string,
  ) {
    this.rpc = new RpcClient(nc);
  }

  prepareDisk(request: RuntimeRequest): Promise<RuntimeStepReply> {
    return this.call(this.subjects.runtimePrepareDisk, request, STEP_TIMEOUT_MS);
  }

  boot(request: RuntimeBootRequest): Promise<RuntimeStepReply> {
    return this.call(this.subjects.runtimeBoot, request, STEP_TIMEOUT_MS);
  }

  health(request: RuntimeRequest): Promise<RuntimeStepReply<RuntimeHealthReply>> {
    return this.call(this.subjects.runtimeHealth, request, STEP_TIMEOUT_MS);
  }

  endRuns(request: RuntimeEndRunsRequest): Promise<RuntimeStepReply> {
    return this.call(this.subjects.runtimeEndRuns, request, STEP_TIMEOUT_MS);
  }

  stop(request: RuntimeRequest): Promise<RuntimeStepReply> {
    return this.call(this.subjects.runtimeStop, request, STEP_TIMEOUT_MS);
  }

  archive(request: RuntimeRequest): Promise<RuntimeStepReply<RuntimeArchiveResult>> {
    return this.call(this.subjects.runtimeArchive, request, Math.max(FILE_STEP_TIMEOUT_MS, this.archiveTimeoutMs + ARCHIVE_ANSWER_MARGIN_MS));
  }

  removeDisk(request: RuntimeRequest): Promise<RuntimeStepReply> {
    return this.call(this.subjects.runtimeRemoveDisk, request, FILE_STEP_TIMEOUT_MS);
  }

  /** The intern's transcripts and run chunks (CONTRACT section 22); a long history goes in batches, hence the longer wait. */
  purgeTranscripts(request: RuntimeRequest): Promise<RuntimeStepReply> {
    return this.call(this.subjects.purgeTranscripts, request, FILE_STEP_TIMEOUT_MS);
  }

  /** The intern's egress log (interface section 19), in batches like the transcripts. */
  purgeEgressLog(request: RuntimeRequest): Promise<RuntimeStepReply> {
    return this.call(this.egressPurgeSubject, request, FILE_STEP_TIMEOUT_MS);
  }

  private async call<T>(subject: string, request: RuntimeRequest, timeoutMs: number): Promise<RuntimeStepReply<T>> {
    let reply: unknown;
    try {
      reply = await this.rpc.request<unknown>(subject, request, { timeoutMs, correlationId: request.correlationId });
    } catch (error) {
      throw new TransientDriverError(error instanceof Error ? error.message : String(error), { cause: error });
    }
    if (!isStepReply(reply)) throw new TransientDriverError(`${subject}: unexpected answer ${JSON.stringify(reply)}`);
    return reply as RuntimeStepReply<T>;
  }
}

function isStepReply(value: unknown): value is { ok: boolean } {
  if (typeof value !== 'object' || value === null) return false;
  const { ok, message } = value as { ok?: unknown; message?: unknown };
  return ok === true || (ok === false && typeof message === 'string');
}
