import { BeforeApplicationShutdown, Controller, Get, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ANSWER_FREE_TEXT, callerId, DomainError, isUuid, parseAnswerRunBody, parseRunListQuery } from '@interns/contracts';
import type {
  AnswerRunRequest,
  ListQuestionsRequest,
  ListRunsRequest,
  PlatformConfig,
  QuestionInbox,
  RunPage,
  RunRequest,
  RunResource,
  RunStreamGrant,
} from '@interns/contracts';
import { assertNoCommandBody, jsonBodyOf } from '../http/body-rules';
import { RUN_ID_HEADER } from '../chat/run-id-header';
import { CHAT_DEPENDENCIES, type ChatDependencies } from '../chat/chat.tokens';
import { CORRELATION_ID_HEADER } from '../gateway-request';
import { GATEWAY_CONFIG } from '../gateway.tokens';
import { INTERN_ID_PARAM, visibleId } from '../interns/intern-routes';
import { ServiceClient } from '../service.client';
import { ReaderQuota } from './reader-quota';
import { RunStreamReader } from './run-stream.reader';

type RawQuery = Record<string, string | string[] | undefined>;

const RUN_ID_PARAM = 'run_id';
const ONE_RUN = `:${INTERN_ID_PARAM}/runs/:${RUN_ID_PARAM}`;

/**
 * HTTP adapter of runs as resources and the question inbox (CONTRACT section 12). Checks 1-5 ran in the
 * admission hook; the runs service decides visibility (the intern's, then the run's: anything else 404). The
 * stream route replays the run's chunk log and follows it live (RunStreamReader); its readers never cancel.
 */
@Controller('interns')
export class RunsHttpController implements BeforeApplicationShutdown {
  private readonly readers = new Set<RunStreamReader>();
  private readonly quota: ReaderQuota;

  constructor(
    @Inject(ServiceClient) private readonly services: ServiceClient,
    @Inject(CHAT_DEPENDENCIES) private readonly chat: ChatDependencies,
    @Inject(GATEWAY_CONFIG) private readonly config: PlatformConfig,
  ) {
    this.quota = new ReaderQuota(config.runStreamReadersPerCaller);
  }

  @Get(`:${INTERN_ID_PARAM}/runs`)
  list(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string): Promise<RunPage> {
    const query = parseRunListQuery(request.query as RawQuery);
    const payload: ListRunsRequest = { context: this.services.contextOf(request), internId: visibleId(internId), query };
    return this.services.request<RunPage>(this.services.subjects.runs.listRuns, request, payload);
  }

  @Get(ONE_RUN)
  get(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string, @Param(RUN_ID_PARAM) runId: string): Promise<RunResource> {
    return this.services.request<RunResource>(this.services.subjects.runs.getRun, request, this.runRequest(request, internId, runId));
  }

  @Get(`${ONE_RUN}/stream`)
  async stream(
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
    @Param(INTERN_ID_PARAM) internId: string,
    @Param(RUN_ID_PARAM) runId: string,
  ): Promise<void> {
    const payload = this.runRequest(request, internId, runId);
    const afterSeq = resumePointOf(request);
    const giveBack = this.quota.take(callerId(payload.context.principal));
    try {
      await this.follow(request, reply, payload, afterSeq);
    } finally {
      giveBack();
    }
  }

  private async follow(request: FastifyRequest, reply: FastifyReply, payload: RunRequest, afterSeq: number): Promise<void> {
    const grant = await this.services.request<RunStreamGrant>(this.services.subjects.runs.followRun, request, payload);
    const reader = new RunStreamReader({
      nc: this.chat.nats,
      streamName: this.services.subjects.runChunkStreamName,
      grant,
      afterSeq,
      response: reply.raw,
      keepaliveIntervalMs: this.config.keepaliveIntervalMs,
      bufferLimitBytes: this.config.streamClientBufferBytes,
      headers: { [CORRELATION_ID_HEADER]: payload.context.correlationId, [RUN_ID_HEADER]: grant.run.id },
    });
    await reader.open();
    reply.hijack();
    this.readers.add(reader);
    await reader.follow();
    this.readers.delete(reader);
  }

  @Post(`${ONE_RUN}/cancel`)
  @HttpCode(202)
  cancel(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string, @Param(RUN_ID_PARAM) runId: string) {
    assertNoCommandBody(request);
    const payload = this.runRequest(request, internId, runId);
    return this.services.request<{ cancelling: true }>(this.services.subjects.runs.cancelRun, request, payload);
  }

  @Post(`${ONE_RUN}/answer`)
  @HttpCode(202)
  answer(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string, @Param(RUN_ID_PARAM) runId: string) {
    const answer = parseAnswerRunBody(jsonBodyOf(request, ANSWER_FREE_TEXT));
    const payload: AnswerRunRequest = { ...this.runRequest(request, internId, runId), answer };
    return this.services.request<{ answered: true }>(this.services.subjects.runs.answerRun, request, payload);
  }

  @Get(`:${INTERN_ID_PARAM}/questions`)
  questions(@Req() request: FastifyRequest, @Param(INTERN_ID_PARAM) internId: string): Promise<QuestionInbox> {
    const payload: ListQuestionsRequest = { context: this.services.contextOf(request), internId: visibleId(internId) };
    return this.services.request<QuestionInbox>(this.services.subjects.runs.listQuestions, request, payload);
  }

  /** Before the HTTP server closes: readers end with `stream_severed` (the runs go on; the client resumes). */
  beforeApplicationShutdown(): void {
    for (const reader of this.readers) reader.sever();
  }

  private runRequest(request: FastifyRequest, internId: string, runId: string): RunRequest {
    const intern = visibleId(internId);
    // Like a non-uuid intern id: names no run.
    if (!isUuid(runId)) throw new DomainError('not_found', 'run not found');
    return { context: this.services.contextOf(request), internId: intern, runId: runId.toLowerCase() };
  }
}

const CHUNK_NUMBER = /^\d{1,15}$/;

/**
 * Where a reader resumes: after chunk `?starting_after=<n>`, else after `Last-Event-ID: <n>` (what an
 * EventSource sends when it reconnects), else from the first chunk.
 */
function resumePointOf(request: FastifyRequest): number {
  const query = (request.query as RawQuery).starting_after;
  const header = request.headers['last-event-id'];
  const [name, value] = query !== undefined ? ['starting_after', query] : ['Last-Event-ID', header];
  if (value === undefined) return 0;
  if (typeof value !== 'string' || !CHUNK_NUMBER.test(value)) {
    throw new DomainError('invalid_body', `${name} must be the number of a chunk of the run (an id: the stream sent)`);
  }
  return Number(value);
}
