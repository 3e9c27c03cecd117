import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import { chunkIdOf, DomainError, sessionRefusal } from '@interns/contracts';
import type { ParsedAnswer, Question, SessionMessage, SessionMessageReply } from '@interns/contracts';
import { runUsage } from '@interns/runs-domain';
import type { SessionEvent } from '@interns/runs-domain';
import { ModelProviderError } from '../agent/model-provider';
import { FALLBACK_ANSWER } from '../agent/tools/ask-user.tool';
import { OwnedSession } from '../sessions/owned-session';
import type { SessionSnapshot } from '../sessions/session-streams';
import { AgentLoop } from './agent-loop';
import type { RunControls } from './agent-loop';
import { PendingQuestion } from './pending-question';
import { endingCommand } from './run-ending';
import type { Ending, Outcome } from './run-ending';
import { RunChunkLog } from './run-chunk-log';
import { RunRecorder } from './run-recorder';
import { RunResponsePublisher } from './run-response.publisher';
import type { LiveStream, RunEnvironment, RunSpec } from './run-spec';
import { activeRunsGauge, runDurationHistogram } from './runs.metrics';

class RunStopped extends Error {
  constructor() {
    super('run stopped');
  }
}

/**
 * One going run on its owning replica: its life from start to recorded end, its chunk log, and its link to
 * the client. Messages for it (steering, answers, a client that left, a cancel, the intern ending it) arrive
 * through `receive`; it stops on them, on its deadlines, or on shutdown, and asks the caller when the loop
 * needs an answer. The model turns and tools are the AgentLoop's, shell consent is the session's
 * (`shellConsent`), the responses' chunks and endings are the RunResponsePublisher's, each written to the run's
 * log (RunChunkLog) and, while a client reads it live, to its chat stream.
 */
export class LiveRun {
  private readonly logger = new Logger('Run');
  private readonly abort = new AbortController();
  private readonly recorder: RunRecorder;
  private readonly question = new PendingQuestion();
  /** Every chunk of the run, numbered, for its stream route. */
  private readonly log: RunChunkLog;
  /** The response being written now (read live or not); none while the run waits on an answer. */
  private response: RunResponsePublisher | null = null;
  private ending: Ending | null = null;
  private readonly steering: string[] = [];
  private readonly deadline: NodeJS.Timeout;
  private readonly startedAt = performance.now();
  /** Settles when the run has ended and its ending is recorded. */
  readonly finished: Promise<void>;

  /** `session`: the session right after the run started; the run records on from it. */
  constructor(
    private readonly spec: RunSpec,
    private readonly env: RunEnvironment,
    session: SessionSnapshot,
  ) {
    this.recorder = new RunRecorder(new OwnedSession(env.streams, spec.sessionId, session), spec);
    this.log = RunChunkLog.of(env.nc, env.subjects.runs.chunks(spec.runId));
    activeRunsGauge.inc();
    this.attach(spec.stream);
    this.deadline = setTimeout(() => this.stop({ reason: 'execution_deadline', tell: 'run_ended' }), env.settings.executionDeadlineMs);
    this.deadline.unref();
    this.finished = new Promise((resolve) => setImmediate(() => void this.execute().finally(resolve)));
  }

  get sessionId(): string {
    return this.spec.sessionId;
  }

  get runId(): string {
    return this.spec.runId;
  }

  get internId(): string {
    return this.spec.internId;
  }

  async receive(message: SessionMessage): Promise<SessionMessageReply> {
    switch (message.type) {
      case 'steer':
        // A run that ended in between refuses as a cancel does; the steering caller then starts a new run.
        if (this.ending !== null) return sessionRefusal('run_not_active', 'the run has already ended');
        await this.recorder.record([], { type: 'JoinPrompt', text: message.text, at: now() }, message.correlationId);
        this.steering.push(message.text);
        return { ok: true };
      case 'answer':
        return this.answer(message);
      case 'disconnect':
        if (this.response !== null && this.response.streamId === message.streamId) {
          if (message.background) this.response.detach();
          else this.stop({ reason: 'client_disconnected', tell: 'nothing' });
        }
        return { ok: true };
      case 'cancel':
        if (this.ending !== null) return sessionRefusal('run_not_active', 'the run has already ended');
        this.stop({ reason: 'caller_cancelled', tell: 'stop' });
        return { ok: true };
      case 'probe':
        return { ok: true };
      case 'end':
        this.stop({ reason: message.reason, tell: 'run_ended' });
        await this.finished;
        return { ok: true };
      default: {
        const unknown: never = message;
        return sessionRefusal('invalid_body', `unknown session message ${JSON.stringify(unknown)}`);
      }
    }
  }

  /** Ends the run because this replica is going away; an attached client learns it as a retryable error. */
  async shutdown(): Promise<void> {
    this.stop({ reason: 'owner_lost', tell: 'internal_error' });
    await this.finished;
  }

  private stop(ending: Ending): void {
    if (this.ending !== null) return;
    this.ending = ending;
    this.abort.abort(new RunStopped());
    this.question.giveUp();
  }

  /** Starts the run's next response: read live on `stream` (chat), or kept in the log only. */
  private attach(stream: LiveStream | null): void {
    const { nc, subjects, settings } = this.env;
    const { model, sessionId } = this.spec;
    const live = stream === null ? null : { nc, subject: subjects.runs.stream(stream.streamId), streamId: stream.streamId, heartbeatMs: settings.streamHeartbeatMs };
    this.response = new RunResponsePublisher({
      chunkId: chunkIdOf(stream?.streamId ?? randomUUID()),
      created: stream?.created ?? Math.floor(Date.now() / 1000),
      model,
      sessionId,
      log: this.log,
      live,
    });
  }

  private async answer(message: Extract<SessionMessage, { type: 'answer' }>): Promise<SessionMessageReply> {
    const waitingOn = this.question.toolCallId;
    try {
      // The decider judges every answer (unknown, no longer pending, not offered), open question or not.
      const command = { type: 'AnswerQuestion', toolCallId: message.toolCallId, raw: message.content, by: 'caller' } as const;
      const answer = answerIn(await this.recorder.record([], command, message.correlationId));
      if (waitingOn !== message.toolCallId || answer === null) {
        return sessionRefusal('interaction_not_pending', 'the question is no longer pending');
      }
      // The answer's response is there before the loop goes on with the answer.
      this.attach(message.stream);
      this.question.settle(message.toolCallId, answer);
      return { ok: true };
    } catch (error) {
      if (error instanceof DomainError) return { ok: false, ...error.toPayload() };
      throw error;
    }
  }

  private async execute(): Promise<void> {
    // Read only when nobody stopped the run (`ending` is null).
    let outcome: Outcome = { finish: 'stop' };
    try {
      outcome = { finish: await new AgentLoop(this.spec, this.env, this.controls()).execute() };
    } catch (error) {
      if (this.ending === null) {
        outcome =
          error instanceof ModelProviderError
            ? { finish: 'error', reason: error.reason, message: error.message }
            : { finish: 'error', reason: 'internal_error', message: 'the run failed' };
        if (!(error instanceof ModelProviderError)) {
          this.logger.error(`run ${this.spec.runId} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
        }
      }
    } finally {
      clearTimeout(this.deadline);
      activeRunsGauge.dec();
      const ending = this.ending === null ? outcome.finish : `cancelled:${this.ending.reason}`;
      runDurationHistogram.observe({ ending }, (performance.now() - this.startedAt) / 1000);
    }
    await this.conclude(outcome).catch((error: unknown) => {
      this.logger.error(`run ${this.spec.runId} could not record its end: ${error instanceof Error ? error.message : String(error)}`);
      this.response?.abandon();
    });
    // The run's log is complete before its session subject goes: a reader never waits on a run nobody owns.
    await this.log.flushed();
  }

  private async conclude(outcome: Outcome): Promise<void> {
    const ending = this.ending;
    // The usage reported in the final chunk is the run's, as recorded before the run ends.
    const usage = runUsage(this.recorder.state);
    await this.recorder.record(this.recorder.takeOutput(), endingCommand(this.spec.runId, ending, outcome, now()));
    // Stopped while it waited on an answer: the ending gets a response of its own.
    if (this.response === null) this.attach(null);
    const response = this.response as RunResponsePublisher | null;
    this.response = null;
    response?.endWithRun(ending, outcome, usage);
  }

  /**
   * Asks `service.provide_input`. With a client (chat) the response ends with the tool call and the run waits
   * for the answer or the interaction deadline; without one (invoke) the intern's fallback answers at once.
   */
  private async ask(question: Question): Promise<ParsedAnswer> {
    const toolCallId = `call_${randomUUID().replace(/-/g, '')}`;
    const { interactionDeadlineMs } = this.env.settings;
    const expiresAt = new Date(Date.now() + interactionDeadlineMs).toISOString();
    await this.recorder.record(this.recorder.takeOutput(), { type: 'AskQuestion', runId: this.spec.runId, toolCallId, question, expiresAt });
    const response = this.response;
    if (this.spec.origin === 'invoke' || response === null) {
      const events = await this.recorder.record([], { type: 'AnswerQuestion', toolCallId, raw: FALLBACK_ANSWER, by: 'fallback' });
      const answer = answerIn(events);
      if (answer === null) throw new Error('the fallback answer was not recorded');
      return answer;
    }
    this.response = null;
    response.endWithQuestion(toolCallId, question);
    const expire = () => this.stop({ reason: 'interaction_deadline', tell: 'run_ended', toolCallId });
    const answer = await this.question.wait(toolCallId, interactionDeadlineMs, expire);
    if (answer === null) throw new RunStopped();
    return answer;
  }

  /** What the agent loop may do to the run. */
  private controls(): RunControls {
    return {
      recorder: this.recorder,
      signal: this.abort.signal,
      checkGoing: () => this.checkGoing(),
      stream: (text) => this.response?.content(text),
      ask: (question) => this.ask(question),
      takeSteering: () => this.steering.splice(0),
      stopByCaller: () => this.stopByCaller(),
    };
  }

  private stopByCaller(): never {
    this.stop({ reason: 'caller_cancelled', tell: 'stop' });
    throw new RunStopped();
  }

  private checkGoing(): void {
    if (this.ending !== null) throw new RunStopped();
  }
}

/** The answer an AnswerQuestion command recorded; null when it recorded none. */
function answerIn(events: SessionEvent[]): ParsedAnswer | null {
  const answered = events.find((event) => event.type === 'QuestionAnswered');
  return answered?.type === 'QuestionAnswered' ? answered.data.answer : null;
}

function now(): string {
  return new Date().toISOString();
}
