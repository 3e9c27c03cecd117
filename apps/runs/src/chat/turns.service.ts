import { randomUUID } from 'node:crypto';
import { callerId, DomainError, parseAnswer } from '@interns/contracts';
import type { ApprovalMode, ChatReply, ChatRequest, ChatTurn, InvokeReply, InvokeRequest, RequestContext } from '@interns/contracts';
import { NO_OWNER } from '@interns/messaging';
import type { ActiveRun, SessionOpenState } from '@interns/runs-domain';
import type { ModelProviders } from '../agent/model-providers';
import type { LiveStream } from '../runs/run-spec';
import type { RunHost } from '../runs/run-host';
import type { SessionStreams } from '../sessions/session-streams';
import type { InternLookup } from './intern-lookup';

type Prompt = Extract<ChatTurn, { kind: 'prompt' }>;
type Answer = Extract<ChatTurn, { kind: 'answer' }>;

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
    let openSession = true;
    let sessionId: string = randomUUID();
    if (request.sessionId !== null) {
      // Only sessions invoke issued to this caller on this intern; anything else is nobody's business.
      const session = await this.sessionOf(request.sessionId, request.internId, caller);
      if (session === null || session.origin !== 'invoke') throw new DomainError('not_found', 'session not found');
      const steered = await this.steer(session, request.input, request.context);
      if (steered !== null) return { session_id: session.sessionId, status: 'steered', run_id: steered };
      sessionId = session.sessionId;
      openSession = false;
    }
    const { model, provider } = this.models.resolve(intern.model);
    const run = await this.host.start({
      sessionId,
      openSession,
      internId: intern.id,
      callerId: caller,
      origin: 'invoke',
      model,
      provider,
      approvalMode: 'self-drive',
      instructions: intern.instructions,
      prompt: request.input,
      stream: null,
      correlationId: request.context.correlationId,
    });
    return { session_id: sessionId, status: 'started', run_id: run.runId };
  }

  private async chatPrompt(request: ChatRequest, turn: Prompt): Promise<ChatReply> {
    const intern = await this.interns.running(request.context, request.internId);
    const caller = callerId(request.context.principal);
    let sessionId = turn.sessionId ?? randomUUID();
    let openSession = true;
    if (turn.sessionId !== null) {
      const session = await this.sessionOf(turn.sessionId, request.internId, caller, { absentIsNew: true });
      if (session !== null) {
        const steered = await this.steer(session, turn.text, request.context);
        if (steered !== null) return { status: 'steered', sessionId: session.sessionId, runId: steered };
        sessionId = session.sessionId;
        openSession = false;
      }
    }
    const { model, provider } = this.models.resolve(intern.model);
    const run = await this.host.start({
      sessionId,
      openSession,
      internId: intern.id,
      callerId: caller,
      origin: 'chat',
      model,
      provider,
      approvalMode: turn.approvalMode,
      instructions: intern.instructions,
      prompt: turn.text,
      stream: { streamId: request.streamId, created: request.created },
      correlationId: request.context.correlationId,
    });
    return { status: 'streaming', sessionId, model, runId: run.runId };
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
