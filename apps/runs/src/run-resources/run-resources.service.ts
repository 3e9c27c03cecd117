import type { DataSource } from 'typeorm';
import { ACTIVE_RUN_STATUSES, type CursorCodec, DomainError, isUuid, runViewerOf } from '@interns/contracts';
import type {
  AnswerRunRequest,
  ListQuestionsRequest,
  ListRunsRequest,
  QuestionInbox,
  RequestContext,
  RunPage,
  RunRequest,
  RunResource,
  RunStreamGrant,
  Subjects,
} from '@interns/contracts';
import { NO_OWNER } from '@interns/messaging';
import type { InternLookup } from '../chat/intern-lookup';
import type { TurnsService } from '../chat/turns.service';
import type { RunHost } from '../runs/run-host';
import type { SessionStreams } from '../sessions/session-streams';
import { RUN_COLUMNS, type RunRow, toRunResource } from './run-rows';

/**
 * Runs as resources and the question inbox (CONTRACT section 12), served by any replica: list, get, cancel,
 * answer, and what the gateway needs to follow a run's chunk log. Every route first asks lifecycle whether
 * the caller sees the intern (404), then shows only the runs the caller may see (`runViewerOf`; anything else
 * 404). Cancel and answer go to the run's owner through its session subject; a run whose owner is gone is
 * ended here.
 */
export class RunResourcesService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly interns: InternLookup,
    private readonly cursors: CursorCodec,
    private readonly host: RunHost,
    private readonly streams: SessionStreams,
    private readonly turns: TurnsService,
    private readonly subjects: Subjects,
    private readonly retentionMs: number,
  ) {}

  async list(request: ListRunsRequest): Promise<RunPage> {
    await this.interns.visible(request.context, request.internId);
    const { limit, statuses, startingAfter, sessionId } = request.query;
    const conditions = ['intern_id = $1'];
    const values: unknown[] = [request.internId];
    const viewer = runViewerOf(request.context.principal);
    if (viewer !== null) conditions.push(`caller_id = $${values.push(viewer)}`);
    if (statuses !== null) conditions.push(`status = ANY($${values.push(statuses)})`);
    if (sessionId !== null) conditions.push(`session_id = $${values.push(sessionId)}`);
    if (startingAfter !== null) {
      const position = this.cursors.decode(startingAfter);
      if (position.scope !== request.internId) throw new DomainError('invalid_body', 'starting_after is not a valid cursor');
      conditions.push(`(started_at, id) < ($${values.push(position.createdAt)}::timestamptz, $${values.push(position.id)}::uuid)`);
    }
    const rows: RunRow[] = await this.dataSource.query(
      `SELECT ${RUN_COLUMNS} FROM runs.runs WHERE ${conditions.join(' AND ')}
        ORDER BY started_at DESC, id DESC LIMIT $${values.push(limit + 1)}`,
      values,
    );
    const page = rows.slice(0, limit);
    const list: RunPage = { data: page.map(toRunResource), has_more: rows.length > limit };
    const last = page[page.length - 1];
    if (list.has_more && last) {
      list.next_cursor = this.cursors.encode({ createdAt: last.started_at.toISOString(), id: last.id, scope: request.internId });
    }
    return list;
  }

  async get(request: RunRequest): Promise<RunResource> {
    return toRunResource(await this.visibleRun(request.context, request.internId, request.runId));
  }

  /**
   * The run and where its chunks are, unless they are past RUN_REPLAY_RETENTION_MS or went with its transcript
   * (TRANSCRIPT_RETENTION_MS): 410 `run_expired` either way.
   */
  async follow(request: RunRequest): Promise<RunStreamGrant> {
    const row = await this.visibleRun(request.context, request.internId, request.runId);
    if (row.ended_at !== null && Date.now() - row.ended_at.getTime() > this.retentionMs) {
      throw new DomainError('run_expired', 'the run ended longer ago than its chunks are kept');
    }
    if (row.transcript_purged_at !== null) {
      throw new DomainError('run_expired', "the run's transcript was purged (TRANSCRIPT_RETENTION_MS)");
    }
    return { run: toRunResource(row), subject: this.subjects.runs.chunks(row.id) };
  }

  /** The open questions of the runs the caller sees, oldest first. */
  async questions(request: ListQuestionsRequest): Promise<QuestionInbox> {
    await this.interns.visible(request.context, request.internId);
    const values: unknown[] = [request.internId];
    const viewer = runViewerOf(request.context.principal);
    const byViewer = viewer === null ? '' : ` AND caller_id = $${values.push(viewer)}`;
    const rows: RunRow[] = await this.dataSource.query(
      `SELECT ${RUN_COLUMNS} FROM runs.runs WHERE intern_id = $1 AND open_question IS NOT NULL${byViewer}
        ORDER BY open_question->>'expires_at', id`,
      values,
    );
    return {
      data: rows.flatMap((row) =>
        row.open_question === null
          ? []
          : [
              {
                run_id: row.id,
                session_id: row.session_id,
                tool_call_id: row.open_question.tool_call_id,
                arguments: row.open_question.arguments,
                expires_at: row.open_question.expires_at,
              },
            ],
      ),
    };
  }

  /** Asks the run's owner to stop it (it ends `cancelled`); 409 `run_not_active` once it has ended. */
  async cancel(request: RunRequest): Promise<{ cancelling: true }> {
    const row = await this.visibleRun(request.context, request.internId, request.runId);
    if (!isActive(row)) throw notActive();
    const reply = await this.host.send(row.session_id, { type: 'cancel', correlationId: request.context.correlationId });
    if (reply === NO_OWNER) {
      // Ended between the read and the message, or its owner died: only a run still recorded as going is ended here.
      const current = await this.visibleRun(request.context, request.internId, request.runId);
      if (!isActive(current)) throw notActive();
      await this.host.cancelOrphan(current, { reason: 'caller_cancelled', tell: 'stop' });
    } else if (!reply.ok) {
      throw new DomainError(reply.reason, reply.message);
    }
    return { cancelling: true };
  }

  /** The answer route: as answering in chat, but the run goes on with no client attached. */
  async answer(request: AnswerRunRequest): Promise<{ answered: true }> {
    const row = await this.visibleRun(request.context, request.internId, request.runId);
    const { state } = await this.streams.load(row.session_id);
    if (state.kind !== 'open') throw new DomainError('not_found', 'run not found');
    const { tool_call_id: toolCallId, content } = request.answer;
    if (state.questions[toolCallId]?.runId !== row.id) {
      throw new DomainError('interaction_unknown', 'no question of this run has that tool_call_id');
    }
    await this.turns.answer(state, toolCallId, content, {
      stream: null,
      approvalMode: state.activeRun?.approvalMode ?? 'manual',
      correlationId: request.context.correlationId,
    });
    return { answered: true };
  }

  private async visibleRun(context: RequestContext, internId: string, runId: string): Promise<RunRow> {
    await this.interns.visible(context, internId);
    if (!isUuid(runId)) throw runNotFound();
    const values: unknown[] = [runId, internId];
    const viewer = runViewerOf(context.principal);
    const byViewer = viewer === null ? '' : ` AND caller_id = $${values.push(viewer)}`;
    const [row]: RunRow[] = await this.dataSource.query(`SELECT ${RUN_COLUMNS} FROM runs.runs WHERE id = $1 AND intern_id = $2${byViewer}`, values);
    if (row === undefined) throw runNotFound();
    return row;
  }
}

function isActive(row: RunRow): boolean {
  return ACTIVE_RUN_STATUSES.includes(row.status);
}

function notActive(): DomainError {
  return new DomainError('run_not_active', 'the run has already ended');
}

function runNotFound(): DomainError {
  return new DomainError('not_found', 'run not found');
}
