import { randomUUID } from 'node:crypto';
import { callerId, DomainError, parseAnswer } from '@interns/contracts';
import type { ApprovalMode, ChatReply, ChatRequest, ChatTurn, InvokeReply, InvokeRequest, RequestContext } from '@interns/contracts';
import { NO_OWNER } from '@interns/messaging';
import type { ActiveRun, SessionOpenState } from '@interns/runs-domain';
import type { ModelProviders } from '../agent/model-providers';
import type { LiveStream } from '../runs/run-spec';
import type { RunHost, RunStart } from '../runs/run-host';
import { InternHaltedError } from '../runs/run-starter';
import type { SessionStreams } from '../sessions/session-streams';
import type { InternLookup, RunnableIntern } from './intern-lookup';

type Prompt = Extract<ChatTurn, { kind: 'prompt' }>;
type Answer = Extract<ChatTurn, { kind: 'answer' }>;
/** What a prompt did: steered the session's going run, or started one (with the model it runs on). */
type PromptOutcome = { steered: true; sessionId: string; runId: string } | { steered: false; sessionId: string; runId: string; model: string };

/**
 * Chat and invoke (CONTRACT sections 6 and 7), served by any replica: who may use which session, whether a
 * prompt starts a run or steers the going one, and where an answer goes. The run itself lives on the
 * replica that started it (RunHost).
 */
export class TurnsService {
  constructor(
    private readonly host: RunHost,
    private readonly streams: SessionStreams,
    private readonly interns: InternLookup,
    private readonly models: ModelProviders,
  ) {}

  async chat(request: ChatRequest): Promise<ChatReply> {
    const { turn } = request;
    return turn.kind === 'prompt' ? this.chatPrompt(request, turn) : this.chatAnswer(request, turn);
  }

  async invoke(request: InvokeRequest): Promise<InvokeReply> {
    const intern = await this.interns.running(request.context, request.internId);
    const caller = callerId(request.context.principal);
    let session: SessionOpenState | null = null;
    if (request.sessionId !== null) {
      // Only sessions invoke issued to this caller on this intern; anything else is nobody's business.
      session = await this.sessionOf(request.sessionId, request.internId, caller);
      if (session === null || session.origin !== 'invoke') throw new DomainError('not_found', 'session not found');
    }
    const turn = await this.steerOrStart(
      { context: request.context, intern, caller, session, newSessionId: randomUUID() },
      { text: request.input, origin: 'invoke', approvalMode: 'self-drive', stream: null },
    );
    return { session_id: turn.sessionId, status: turn.steered ? 'steered' : 'started', run_id: turn.runId };
  }

  private async chatPrompt(request: ChatRequest, turn: Prompt): Promise<ChatReply> {
    const intern = await this.interns.running(request.context, request.internId);
    const caller = callerId(request.context.principal);
    // A session id the caller names and nobody has used yet starts a new session under that id.
    const session =
      turn.sessionId === null ? null : await this.sessionOf(turn.sessionId, request.internId, caller, { absentIsNew: true });
    const stream = { streamId: request.streamId, created: request.created };
    const outcome = await this.steerOrStart(
      { context: request.context, intern, caller, session, newSessionId: turn.sessionId ?? randomUUID() },
      { text: turn.text, origin: 'chat', approvalMode: turn.approvalMode, stream },
    );
    if (outcome.steered) return { status: 'steered', sessionId: outcome.sessionId, runId: outcome.runId };
    return { status: 'streaming', sessionId: outcome.sessionId, model: outcome.model, runId: outcome.runId };
  }

  /**
   * A prompt for `session` (null: a new session under `newSessionId`): steers its going run when it has one,
   * otherwise starts a run, in that session or the new one, with the intern's model and instructions.
   */
  private async steerOrStart(
    to: { context: RequestContext; intern: RunnableIntern; caller: string; session: SessionOpenState | null; newSessionId: string },
    prompt: Pick<RunStart, 'origin' | 'approvalMode' | 'stream'> & { text: string },
  ): Promise<PromptOutcome> {
    const { context, intern, caller, session } = to;
    if (session !== null) {
      const steered = await this.steer(session, prompt.text, context);
      if (steered !== null) return { steered: true, sessionId: session.sessionId, runId: steered };
    }
    const sessionId = session?.sessionId ?? to.newSessionId;
    const start = async (running: RunnableIntern) => {
      const { model, provider } = this.models.resolve(running.model);
      const run = await this.host.start({
        sessionId,
        openSession: session === null,
        internId: running.id,
        haltSeq: running.haltSeq,
        callerId: caller,
        origin: prompt.origin,
        model,
        provider,
        approvalMode: prompt.approvalMode,
        instructions: running.instructions,
        prompt: prompt.text,
        stream: prompt.stream,
        correlationId: context.correlationId,
      });
      return { steered: false as const, sessionId, runId: run.runId, model };
    };
    try {
      return await start(intern);
    } catch (error) {
      if (!(error instanceof InternHaltedError)) throw error;
      // The cached lookup was older than the intern's runs being ended: lifecycle's answer now decides (a 409 when
      // it was suspended or deleted; when it runs again, the start is tried once more).
      this.interns.evict(intern.id);
      return start(await this.interns.running(context, intern.id));
    }
  }

  private async chatAnswer(request: ChatRequest, turn: Answer): Promise<ChatReply> {
    await this.interns.running(request.context, request.internId);
    const caller = callerId(request.context.principal);
    const session = await this.sessionOf(turn.sessionId, request.internId, caller);
    if (session === null) throw new DomainError('not_found', 'session not found');
    const run = await this.answer(session, turn.toolCallId, turn.content, {
      stream: { streamId: request.streamId, created: request.created },
      approvalMode: turn.approvalMode,
      correlationId: request.context.correlationId,
    });
    return { status: 'streaming', sessionId: session.sessionId, model: run.model, runId: run.runId };
  }

  /**
   * Delivers an answer to the run that asked `toolCallId` in `session` (chat, or the answer route with no
   * stream): unknown question 404, no longer pending 409, not offered 400, judged here first so a bad answer
   * never travels to the owner, which judges again against its own state.
   */
  async answer(
    session: SessionOpenState,
    toolCallId: string,
    content: string,
    delivery: { stream: LiveStream | null; approvalMode: ApprovalMode; correlationId: string },
  ): Promise<ActiveRun> {
    const asked = session.questions[toolCallId];
    if (asked === undefined) throw new DomainError('interaction_unknown', 'no question of this session has that tool_call_id');
    if (asked.status !== 'open' || session.activeRun === null) {
      throw new DomainError('interaction_not_pending', 'the question is no longer pending');
    }
    parseAnswer(asked.question, content);
    const run = session.activeRun;
    const reply = await this.host.send(session.sessionId, { type: 'answer', toolCallId, content, ...delivery });
    if (reply === NO_OWNER) {
      await this.host.cancelOrphan({ id: run.runId, session_id: session.sessionId, model: run.model });
      throw new DomainError('interaction_not_pending', 'the run that asked this question is no longer going');
    }
    if (!reply.ok) throw new DomainError(reply.reason, reply.message);
    return run;
  }

  /** The session if it is this caller's on this intern; null when absent (and `absentIsNew`); 404 otherwise. */
  private async sessionOf(
    sessionId: string,
    internId: string,
    caller: string,
    options: { absentIsNew?: boolean } = {},
  ): Promise<SessionOpenState | null> {
    const { state } = await this.streams.load(sessionId);
    if (state.kind === 'absent') {
      if (options.absentIsNew) return null;
      throw new DomainError('not_found', 'session not found');
    }
    if (state.internId !== internId || state.callerId !== caller) throw new DomainError('not_found', 'session not found');
    return state;
  }

  /** Delivers a prompt into the session's going run: its id; null when no run is going (or its owner is gone). */
  private async steer(session: SessionOpenState, text: string, context: RequestContext): Promise<string | null> {
    const run = session.activeRun;
    if (run === null) return null;
    const reply = await this.host.send(session.sessionId, { type: 'steer', text, correlationId: context.correlationId });
    if (reply === NO_OWNER) {
      await this.host.cancelOrphan({ id: run.runId, session_id: session.sessionId, model: run.model });
      return null;
    }
    // Any refusal (run_not_active: the run ended in between) means no run took the prompt: the caller starts one.
    return reply.ok ? run.runId : null;
  }
}
