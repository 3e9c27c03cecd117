import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Logger } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/transport-node';
import { DomainError, PERMISSION_OPTIONS } from '@interns/contracts';
import type { ApprovalMode, ElicitationField, ParsedAnswer, Question, SessionMessage, SessionMessageReply, Subjects } from '@interns/contracts';
import type { EventMetadata } from '@interns/event-store';
import { runUsage } from '@interns/runs-domain';
import type { RunProgressEvent, SessionCommand, SessionEvent, SessionOrigin } from '@interns/runs-domain';
import { AGENT_TOOL_SPECS, DEFAULT_ELICITATION_FIELDS, FALLBACK_ANSWER, parseToolArguments } from '../agent/agent-tools';
import { AGENT_TOOLS, ModelProviderError } from '../agent/model-provider';
import type { ConversationMessage, ModelProvider, ModelToolCall } from '../agent/model-provider';
import type { RuntimeDriver } from '../runtime/runtime-driver';
import { OwnedSession } from '../sessions/owned-session';
import type { SessionSnapshot, SessionStreams } from '../sessions/session-streams';
import { endingChunk, endingCommand } from './run-ending';
import type { Ending, Outcome } from './run-ending';
import { activeRunsGauge, openQuestionsGauge, runDurationHistogram } from './runs.metrics';
import { StreamPublisher } from './stream-publisher';

export interface RunSettings {
  interactionDeadlineMs: number;
  executionDeadlineMs: number;
  streamHeartbeatMs: number;
  /** Tool calls one run may make; the model asking for one more ends the run with finish `length`. */
  maxToolCallsPerRun: number;
}

/** What a run needs from its replica. */
export interface RunEnvironment {
  nc: NatsConnection;
  subjects: Subjects;
  streams: SessionStreams;
  /** Where the intern's tools run (its sandboxed runtime). */
  runtime: RuntimeDriver;
  settings: RunSettings;
}

export interface RunSpec {
  sessionId: string;
  runId: string;
  internId: string;
  callerId: string;
  origin: SessionOrigin;
  model: string;
  provider: ModelProvider;
  approvalMode: ApprovalMode;
  instructions: string | null;
  prompt: string;
  /** The chat response to stream into; null for invoke (nobody watches). */
  stream: { streamId: string; created: number } | null;
  correlationId: string;
  standingShellPermission: 'allow' | 'reject' | null;
}

class RunStopped extends Error {
  constructor() {
    super('run stopped');
  }
}

/**
 * One going run on its owning replica: the agent loop (model turns, tools, questions), the response it
 * streams, and what it records in the session's stream. Messages for it (steering, answers, a client that
 * left, the intern ending it) arrive through `receive`. The tool schemas live in `agent/agent-tools.ts`, how
 * a run ends (recorded command, last chunk) in `run-ending.ts`, where the shell runs behind the runtime driver.
 */
export class LiveRun {
  private readonly logger = new Logger('Run');
  private readonly abort = new AbortController();
  private stream: StreamPublisher | null = null;
  private ending: Ending | null = null;
  private readonly steering: string[] = [];
  private pendingQuestion: { toolCallId: string; resolve: (answer: ParsedAnswer | null) => void; timer: NodeJS.Timeout } | null =
    null;
  private standingShellPermission: 'allow' | 'reject' | null;
  private unrecordedOutput = '';
  /** Every tool call the model asked for so far, whatever came of it (MAX_TOOL_CALLS_PER_RUN). */
  private toolCallsAsked = 0;
  private readonly session: OwnedSession;
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
    this.session = new OwnedSession(env.streams, spec.sessionId, session);
    this.standingShellPermission = spec.standingShellPermission;
    activeRunsGauge.inc();
    if (spec.stream !== null) this.attach(spec.stream.streamId, spec.stream.created);
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
        if (this.ending !== null) return { ok: false, reason: 'no_run', message: 'the run has ended' };
        await this.record([], { type: 'JoinPrompt', text: message.text, at: now() }, message.correlationId);
        this.steering.push(message.text);
        return { ok: true };
      case 'answer':
        return this.answer(message);
      case 'disconnect':
        if (this.stream !== null && this.stream.streamId === message.streamId) {
          this.stop({ reason: 'client_disconnected', tell: 'nothing' });
        }
        return { ok: true };
      case 'probe':
        return { ok: true };
      case 'end':
        this.stop({ reason: message.reason, tell: 'run_ended' });
        await this.finished;
        return { ok: true };
      default: {
        const unknown: never = message;
        return { ok: false, reason: 'invalid_body', message: `unknown session message ${JSON.stringify(unknown)}` };
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
    const pending = this.pendingQuestion;
    if (pending !== null) {
      clearTimeout(pending.timer);
      this.pendingQuestion = null;
      pending.resolve(null);
    }
  }

  private attach(streamId: string, created: number): void {
    this.stream = new StreamPublisher(
      this.env.nc,
      this.env.subjects.runs.stream(streamId),
      streamId,
      created,
      this.spec.model,
      this.env.settings.streamHeartbeatMs,
    );
    this.stream.chunk(this.stream.chunks.role());
  }

  private async answer(message: Extract<SessionMessage, { type: 'answer' }>): Promise<SessionMessageReply> {
    const pending = this.pendingQuestion;
    try {
      // The decider judges every answer (unknown, no longer pending, not offered), open question or not.
      const events = await this.record([], { type: 'AnswerQuestion', toolCallId: message.toolCallId, raw: message.content, by: 'caller' }, message.correlationId);
      const answered = events.find((event) => event.type === 'QuestionAnswered');
      if (pending === null || pending.toolCallId !== message.toolCallId || answered?.type !== 'QuestionAnswered') {
        return { ok: false, reason: 'interaction_not_pending', message: 'the question is no longer pending' };
      }
      clearTimeout(pending.timer);
      this.pendingQuestion = null;
      this.attach(message.streamId, message.created);
      pending.resolve(answered.data.answer);
      return { ok: true };
    } catch (error) {
      if (error instanceof DomainError) return { ok: false, reason: error.reason, message: error.message };
      throw error;
    }
  }

  private async execute(): Promise<void> {
    // Read only when nobody stopped the run (`ending` is null).
    let outcome: Outcome = { finish: 'stop' };
    try {
      outcome = { finish: await this.loop() };
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
      this.stream?.close();
    });
  }

  private async conclude(outcome: Outcome): Promise<void> {
    const flushed = this.flushOutput();
    const ending = this.ending;
    const command = endingCommand(this.spec.runId, ending, outcome, now());
    // The usage reported in the final chunk is the run's, as recorded before the run ends.
    const usage = runUsage(this.session.state);
    await this.record(flushed, command);

    const stream = this.stream;
    this.stream = null;
    if (stream === null) return;
    const chunks = stream.chunks;
    const last = endingChunk(chunks, ending, outcome);
    if (last === null) {
      stream.close();
      return;
    }
    stream.chunk(last);
    stream.chunk(chunks.final(this.spec.sessionId, usage));
    stream.done();
  }

  /** The agent loop: model turns and their tool calls until the model is done (`stop`) or the run reaches a cap (`length`). */
  private async loop(): Promise<'stop' | 'length'> {
    const messages: ConversationMessage[] = [];
    if (this.spec.instructions) messages.push({ role: 'system', content: this.spec.instructions });
    messages.push({ role: 'user', content: this.spec.prompt });
    for (let turn = 1; ; turn++) {
      this.checkGoing();
      await this.record([{ type: 'ModelRequested', data: { runId: this.spec.runId, turn, at: now() } }]);
      const { text, calls } = await this.modelTurn(messages);
      messages.push({ role: 'assistant', content: text, toolCalls: calls });
      if (calls.length === 0) {
        const steered = this.steering.splice(0);
        if (steered.length === 0) return 'stop';
        for (const prompt of steered) messages.push({ role: 'user', content: prompt });
        continue;
      }
      for (const call of calls) {
        if (this.toolCallsAsked >= this.env.settings.maxToolCallsPerRun) return 'length';
        this.toolCallsAsked++;
        messages.push({ role: 'tool', toolCallId: call.id, content: await this.runTool(call) });
      }
    }
  }

  private async modelTurn(messages: ConversationMessage[]): Promise<{ text: string; calls: ModelToolCall[] }> {
    const calls: ModelToolCall[] = [];
    let text = '';
    const usage = { promptTokens: 0, completionTokens: 0, reported: false };
    const turn = this.spec.provider.streamTurn({ model: this.spec.model, messages, tools: AGENT_TOOL_SPECS, signal: this.abort.signal });
    for await (const event of turn) {
      this.checkGoing();
      if (event.type === 'content') {
        if (event.text.length === 0) continue;
        text += event.text;
        this.unrecordedOutput += event.text;
        this.stream?.chunk(this.stream.chunks.content(event.text));
      } else if (event.type === 'tool_call') {
        calls.push(event.call);
      } else {
        usage.promptTokens += event.promptTokens;
        usage.completionTokens += event.completionTokens;
        usage.reported = true;
      }
    }
    this.checkGoing();
    const progress = this.flushOutput();
    if (usage.reported) {
      const { promptTokens, completionTokens } = usage;
      progress.push({ type: 'UsageRecorded', data: { runId: this.spec.runId, promptTokens, completionTokens } });
    }
    await this.record(progress);
    return { text, calls };
  }

  private async runTool(call: ModelToolCall): Promise<string> {
    const args = parseToolArguments(call.arguments);
    if (call.name === AGENT_TOOLS.shell && typeof args?.command === 'string') return this.shell(call, args.command);
    if (call.name === AGENT_TOOLS.askUser && typeof args?.message === 'string') {
      const fields = Array.isArray(args.fields) ? (args.fields as ElicitationField[]) : DEFAULT_ELICITATION_FIELDS;
      const answer = await this.ask({ kind: 'elicitation', message: args.message, fields });
      if (answer.kind === 'elicitation' && answer.answer.action === 'cancel') this.stopByCaller();
      return JSON.stringify(answer.kind === 'elicitation' ? answer.answer : { action: 'decline' });
    }
    return `unknown tool or arguments: ${call.name}`;
  }

  private async shell(call: ModelToolCall, command: string): Promise<string> {
    const refuse = async (why: string): Promise<string> => {
      const result = `Permission to run \`${command}\` was refused${why}.`;
      await this.record([{ type: 'ToolRefused', data: { runId: this.spec.runId, toolCallId: call.id, tool: 'shell', arguments: call.arguments, result } }]);
      return result;
    };
    let consent: 'self-drive' | 'standing' | 'caller';
    if (this.standingShellPermission === 'reject') return refuse(' (standing refusal for this session)');
    if (this.standingShellPermission === 'allow') consent = 'standing';
    else if (this.spec.approvalMode === 'self-drive') consent = 'self-drive';
    else {
      const answer = await this.ask({ kind: 'permission', operation: `shell: ${command}`, options: [...PERMISSION_OPTIONS] });
      const option = answer.kind === 'permission' ? answer.option : 'reject_once';
      if (option === 'cancel') this.stopByCaller();
      if (option === 'allow_always') this.standingShellPermission = 'allow';
      if (option === 'reject_always') this.standingShellPermission = 'reject';
      if (option.startsWith('reject')) return refuse('');
      consent = 'caller';
    }
    await this.record([{ type: 'ToolCalled', data: { runId: this.spec.runId, toolCallId: call.id, tool: 'shell', arguments: call.arguments, consent } }]);
    const text = await this.env.runtime.runShell(this.spec.internId, { command, signal: this.abort.signal });
    this.checkGoing();
    await this.record([{ type: 'ToolCompleted', data: { runId: this.spec.runId, toolCallId: call.id, result: text } }]);
    return text;
  }

  /**
   * Asks `service.provide_input`. With a client (chat) the response ends with the tool call and the run waits
   * for the answer or the interaction deadline; without one (invoke) the intern's fallback answers at once.
   */
  private async ask(question: Question): Promise<ParsedAnswer> {
    const toolCallId = `call_${randomUUID().replace(/-/g, '')}`;
    const expiresAt = new Date(Date.now() + this.env.settings.interactionDeadlineMs).toISOString();
    await this.record(this.flushOutput(), { type: 'AskQuestion', runId: this.spec.runId, toolCallId, question, expiresAt });
    if (this.spec.origin === 'invoke' || this.stream === null) {
      const events = await this.record([], { type: 'AnswerQuestion', toolCallId, raw: FALLBACK_ANSWER, by: 'fallback' });
      const answered = events.find((event) => event.type === 'QuestionAnswered');
      if (answered?.type !== 'QuestionAnswered') throw new Error('the fallback answer was not recorded');
      return answered.data.answer;
    }
    const stream = this.stream;
    this.stream = null;
    stream.chunk(stream.chunks.toolCall(toolCallId, question));
    stream.chunk(stream.chunks.finish('tool_calls'));
    stream.chunk(stream.chunks.final(this.spec.sessionId, null));
    stream.done();
    openQuestionsGauge.inc();
    const answer = await new Promise<ParsedAnswer | null>((resolve) => {
      const timer = setTimeout(() => void this.expire(toolCallId), this.env.settings.interactionDeadlineMs);
      timer.unref();
      this.pendingQuestion = { toolCallId, resolve, timer };
    }).finally(() => openQuestionsGauge.dec());
    if (answer === null) throw new RunStopped();
    return answer;
  }

  private async expire(toolCallId: string): Promise<void> {
    if (this.pendingQuestion?.toolCallId !== toolCallId) return;
    this.stop({ reason: 'interaction_deadline', tell: 'run_ended', toolCallId });
  }

  private stopByCaller(): never {
    this.stop({ reason: 'caller_cancelled', tell: 'stop' });
    throw new RunStopped();
  }

  private checkGoing(): void {
    if (this.ending !== null) throw new RunStopped();
  }

  private flushOutput(): RunProgressEvent[] {
    if (this.unrecordedOutput.length === 0) return [];
    const text = this.unrecordedOutput;
    this.unrecordedOutput = '';
    return [{ type: 'OutputProduced', data: { runId: this.spec.runId, text } }];
  }

  /** Appends progress events and then a command's events, in one append. */
  private record(
    progress: RunProgressEvent[],
    command?: SessionCommand,
    correlationId = this.spec.correlationId,
  ): Promise<SessionEvent[]> {
    const commands: SessionCommand[] = [];
    if (progress.length > 0) commands.push({ type: 'RecordProgress' as const, runId: this.spec.runId, events: progress });
    if (command !== undefined) commands.push(command);
    const metadata: EventMetadata = { correlation_id: correlationId, causation_id: null, actor: this.spec.callerId };
    if (commands.length === 0) return Promise.resolve([]);
    return this.session.execute(commands, metadata);
  }
}

function now(): string {
  return new Date().toISOString();
}
