// Over 300 lines on purpose: one class that runs the effects the run workflow decides (run-workflow.ts); its `perform` switch and the effects' bodies read together. The loop, the record, the responses and the chunk log are files of their own.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import { chunkIdOf, DomainError } from '@interns/contracts';
import type { ParsedAnswer, Question, SessionMessage, SessionMessageReply } from '@interns/contracts';
import { runUsage } from '@interns/runs-domain';
import type { SessionEvent } from '@interns/runs-domain';
import type { EarlyModelTurn } from '../agent/early-model-turn';
import { ModelProviderError } from '../agent/model-provider';
import { FALLBACK_ANSWER } from '../agent/tools/ask-user.tool';
import { OwnedSession } from '../sessions/owned-session';
import type { SessionSnapshot } from '../sessions/session-streams';
import { AgentLoop } from './agent-loop';
import type { RunControls } from './agent-loop';
import { PendingQuestion } from './pending-question';
import { RunChunkLog } from './run-chunk-log';
import { RunRecorder } from './run-recorder';
import { RunResponsePublisher } from './run-response.publisher';
import type { LiveStream, RunEnvironment, RunSpec } from './run-spec';
import { decide, evolve, initialRunState, isStopped } from './run-workflow';
import type { LoopFailure, RunEffect, RunInput, RunWorkflowState } from './run-workflow';
import { activeRunsGauge, runDurationHistogram } from './runs.metrics';

class RunStopped extends Error {
  constructor() {
    super('run stopped');
  }
}

/** What running an input's effects hands back to whoever fed it: the caller's reply, the loop's answer. */
interface Handback {
  reply?: SessionMessageReply;
  answer?: ParsedAnswer | null;
}

/**
 * One going run on its owning replica: its life from start to recorded end, its chunk log, and its link to
 * the client. What the run does on a message (steering, answers, a client that left, a cancel, the intern ending
 * it), a deadline, the loop's result or shutdown is the run workflow's (run-workflow.ts) decision; LiveRun only
 * feeds it those inputs and runs the effects it decides: the record, the responses, the loop, the timers.
 * The model turns and tools are the AgentLoop's, shell consent is the session's (`shellConsent`), the responses'
 * chunks and endings are the RunResponsePublisher's, each written to the run's log (RunChunkLog) and, while a
 * client reads it live, to its chat stream.
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
  private state: RunWorkflowState;
  private readonly steering: string[] = [];
  private deadline: NodeJS.Timeout | null = null;
  private readonly startedAt = performance.now();
  /** Settles when the run has ended and its ending is recorded. */
  readonly finished: Promise<void>;

  /**
   * `session`: the session right after the run started; the run records on from it. `firstTurn`: the model turn
   * asked for while the start was recorded (RunStarter), read as the loop's first; null: the loop asks for it.
   */
  constructor(
    private readonly spec: RunSpec,
    private readonly env: RunEnvironment,
    session: SessionSnapshot,
    private readonly firstTurn: EarlyModelTurn | null = null,
  ) {
    firstTurn?.follow(this.abort.signal);
    this.recorder = new RunRecorder(new OwnedSession(env.streams, spec.sessionId, session), spec);
    this.log = RunChunkLog.of(env.nc, env.subjects.runs.chunks(spec.runId));
    this.state = initialRunState(spec);
    this.feedAtOnce({ type: 'started', stream: spec.stream });
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
    const { reply } = await this.feed({ type: 'message', message, at: now() });
    if (reply === undefined) throw new Error(`the run workflow gave no reply to ${message.type}`);
    return reply;
  }

  /** Ends the run because this replica is going away. */
  async shutdown(): Promise<void> {
    await this.feed({ type: 'shutdown' });
  }

  /**
   * Runs the effects the workflow decides on `input`, in order, evolving the state by each as it runs. An effect
   * without I/O runs at once (no await): what it changes is there before any other input is decided.
   */
  private async feed(input: RunInput): Promise<Handback> {
    const handback: Handback = {};
    for (const effect of decide(input, this.state)) {
      this.state = evolve(this.state, effect);
      const pending = this.perform(effect, handback);
      if (pending !== undefined) await pending;
    }
    return handback;
  }

  /** Runs the effects of an input that needs no I/O (the start, a stop) at once: what they throw, the caller gets. */
  private feedAtOnce(input: RunInput): void {
    for (const effect of decide(input, this.state)) {
      this.state = evolve(this.state, effect);
      if (this.perform(effect, {}) !== undefined) throw new Error(`the run workflow awaits I/O on ${input.type}, fed as needing none`);
    }
  }

  /** Runs one effect; one without I/O runs at once and returns nothing to await. */
  private perform(effect: RunEffect, handback: Handback): Promise<void> | undefined {
    switch (effect.type) {
      case 'count_active_run':
        return void activeRunsGauge.inc();
      case 'arm_execution_deadline':
        this.deadline = setTimeout(() => this.feedAtOnce({ type: 'execution_deadline' }), this.env.settings.executionDeadlineMs);
        return void this.deadline.unref();
      case 'disarm_execution_deadline':
        if (this.deadline !== null) clearTimeout(this.deadline);
        return undefined;
      case 'measure_run':
        activeRunsGauge.dec();
        return void runDurationHistogram.observe({ ending: effect.ending }, (performance.now() - this.startedAt) / 1000);
      case 'attach_response':
        return void this.attach(effect.stream);
      case 'detach_response':
        return void this.response?.detach();
      case 'abandon_response':
        return void this.response?.abandon();
      case 'end_response_with_question':
        return void this.takeResponse()?.endWithQuestion(effect.toolCallId, effect.question);
      case 'end_response_with_run':
        return void this.takeResponse()?.endWithRun(effect.ending, effect.outcome, effect.usage);
      case 'record':
        return this.recorder.record([], effect.command, effect.correlationId).then(() => undefined);
      case 'record_answer':
        return this.recordAnswer(effect, handback);
      case 'record_question':
        return this.recordQuestion(effect, handback);
      case 'answer_with_fallback':
        return this.answerWithFallback(effect.toolCallId, handback);
      case 'record_ending':
        return this.recordEnding(effect, handback);
      case 'queue_steering':
        return void this.steering.push(effect.text);
      case 'stop_loop':
        return void this.abort.abort(new RunStopped());
      case 'await_answer':
        return this.question
          .wait(effect.toolCallId, this.env.settings.interactionDeadlineMs, () => this.feedAtOnce({ type: 'interaction_deadline', toolCallId: effect.toolCallId }))
          .then((answer) => void (handback.answer = answer));
      case 'settle_question':
        return void this.question.settle(effect.toolCallId, effect.answer);
      case 'give_up_question':
        return void this.question.giveUp();
      case 'withhold_answer':
        return void (handback.answer = null);
      case 'log_error':
        return void this.logger.error(effect.message);
      case 'flush_log':
        return this.log.flushed();
      case 'await_finished':
        return this.finished;
      case 'reply':
        return void (handback.reply = effect.reply);
      default: {
        const unknown: never = effect;
        throw new Error(`unknown run effect ${JSON.stringify(unknown)}`);
      }
    }
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

  private takeResponse(): RunResponsePublisher | null {
    const response = this.response;
    this.response = null;
    return response;
  }

  private async recordAnswer(effect: Extract<RunEffect, { type: 'record_answer' }>, handback: Handback): Promise<void> {
    const { toolCallId, raw, stream, correlationId, waitingOn } = effect;
    let events: SessionEvent[];
    try {
      events = await this.recorder.record([], { type: 'AnswerQuestion', toolCallId, raw, by: 'caller' }, correlationId);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      Object.assign(handback, await this.feed({ type: 'answer_refused', refusal: error.toPayload() }));
      return;
    }
    Object.assign(handback, await this.feed({ type: 'answer_recorded', toolCallId, stream, answer: answerIn(events), waitingOn }));
  }

  /** Records the question with the output streamed so far; what comes of it is the workflow's next decision. */
  private async recordQuestion(effect: Extract<RunEffect, { type: 'record_question' }>, handback: Handback): Promise<void> {
    await this.recorder.record(this.recorder.takeOutput(), effect.command);
    Object.assign(handback, await this.feed({ type: 'question_recorded', toolCallId: effect.toolCallId, question: effect.question }));
  }

  private async answerWithFallback(toolCallId: string, handback: Handback): Promise<void> {
    const events = await this.recorder.record([], { type: 'AnswerQuestion', toolCallId, raw: FALLBACK_ANSWER, by: 'fallback' });
    const answer = answerIn(events);
    if (answer === null) throw new Error('the fallback answer was not recorded');
    handback.answer = answer;
  }

  /** Records the run's end, then ends its response; if either fails, the response is abandoned. */
  private async recordEnding(effect: Extract<RunEffect, { type: 'record_ending' }>, handback: Handback): Promise<void> {
    try {
      // The usage reported in the final chunk is the run's, as recorded before the run ends.
      const usage = runUsage(this.recorder.state);
      await this.recorder.record(this.recorder.takeOutput(), effect.command);
      Object.assign(handback, await this.feed({ type: 'ending_recorded', usage }));
    } catch (error) {
      Object.assign(handback, await this.feed({ type: 'ending_not_recorded', detail: error instanceof Error ? error.message : String(error) }));
    }
  }

  private async execute(): Promise<void> {
    let result: RunInput;
    try {
      const finish = await new AgentLoop(this.spec, this.env, this.controls(), this.firstTurn).execute();
      result = { type: 'loop_finished', finish, at: now() };
    } catch (error) {
      result = { type: 'loop_failed', failure: failureOf(error), at: now() };
    }
    await this.feed(result);
  }

  /**
   * Asks `service.provide_input`. With a client (chat) the response ends with the tool call and the run waits
   * for the answer or the interaction deadline; without one (invoke) the intern's fallback answers at once.
   */
  private async ask(question: Question): Promise<ParsedAnswer> {
    const toolCallId = `call_${randomUUID().replace(/-/g, '')}`;
    const expiresAt = new Date(Date.now() + this.env.settings.interactionDeadlineMs).toISOString();
    const { answer } = await this.feed({ type: 'loop_asked', toolCallId, question, expiresAt });
    if (answer === undefined || answer === null) throw new RunStopped();
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
    this.feedAtOnce({ type: 'loop_cancelled_by_answer' });
    throw new RunStopped();
  }

  private checkGoing(): void {
    if (isStopped(this.state)) throw new RunStopped();
  }
}

/** The loop's throw as the workflow tells it apart; the stack of an unexpected one goes to the log. */
function failureOf(error: unknown): LoopFailure {
  if (error instanceof ModelProviderError) return { kind: 'model', reason: error.reason, message: error.message };
  return { kind: 'unexpected', detail: error instanceof Error ? (error.stack ?? error.message) : String(error) };
}

/** The answer an AnswerQuestion command recorded; null when it recorded none. */
function answerIn(events: SessionEvent[]): ParsedAnswer | null {
  const answered = events.find((event) => event.type === 'QuestionAnswered');
  return answered?.type === 'QuestionAnswered' ? answered.data.answer : null;
}

function now(): string {
  return new Date().toISOString();
}
