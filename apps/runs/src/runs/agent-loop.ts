import type { ElicitationQuestion, ParsedAnswer, Question } from '@interns/contracts';
import { shellAnswer, shellConsent } from '@interns/runs-domain';
import type { EarlyModelTurn } from '../agent/early-model-turn';
import type { ConversationMessage, ModelStreamEvent, ModelToolCall, ModelTurnRequest } from '../agent/model-provider';
import { AGENT_TOOL_SPECS, parseToolCall } from '../agent/tools/agent-tools';
import { shellRefusal } from '../agent/tools/shell.tool';
import type { RunEnvironment, RunSpec } from './run-spec';
import type { RunRecorder } from './run-recorder';

/** What the loop needs of the run it drives (LiveRun): its record, its client, and how it stops. */
export interface RunControls {
  readonly recorder: RunRecorder;
  /** Aborted when the run stops; a model turn or shell command going on ends with it. */
  readonly signal: AbortSignal;
  /** Throws when the run was stopped. */
  checkGoing(): void;
  /** Streams model output to the client reading now, if any. */
  stream(text: string): void;
  /** Asks the caller (`service.provide_input`) and waits for the answer. */
  ask(question: Question): Promise<ParsedAnswer>;
  /** The prompts steered into the run since the last call. */
  takeSteering(): string[];
  /** The caller answered `cancel`: the run stops here. */
  stopByCaller(): never;
}

/**
 * The agent loop: model turns and their tool calls until the model is done (`stop`) or the run reaches a cap
 * (`length`). A steered prompt joins when a turn ends without tool calls. Any stop of the run surfaces here
 * as a throw (`checkGoing`, the aborted signal).
 */
export class AgentLoop {
  /** Every tool call the model asked for so far, whatever came of it (MAX_TOOL_CALLS_PER_RUN). */
  private toolCallsAsked = 0;

  constructor(
    private readonly spec: RunSpec,
    private readonly env: RunEnvironment,
    private readonly run: RunControls,
    /** The first turn, already asked for (EarlyModelTurn); null: the loop asks for it like every other. */
    private readonly firstTurn: EarlyModelTurn | null = null,
  ) {}

  async execute(): Promise<'stop' | 'length'> {
    const messages = openingMessages(this.spec);
    for (let turn = 1; ; turn++) {
      this.run.checkGoing();
      const early = turn === 1 ? this.firstTurn : null;
      const at = early?.requestedAt ?? new Date().toISOString();
      // Written with the turn's own record (or the run's ending): nothing waits on it alone.
      this.run.recorder.defer([{ type: 'ModelRequested', data: { runId: this.spec.runId, turn, at } }]);
      const events = early?.stream() ?? this.spec.provider.streamTurn({ ...modelTurnRequest(this.spec, messages), signal: this.run.signal });
      const { text, calls } = await this.modelTurn(events);
      messages.push({ role: 'assistant', content: text, toolCalls: calls });
      if (calls.length === 0) {
        const steered = this.run.takeSteering();
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

  /** Streams one model turn to the client; records its output and usage once the turn is over. */
  private async modelTurn(turn: AsyncIterable<ModelStreamEvent>): Promise<{ text: string; calls: ModelToolCall[] }> {
    const { recorder } = this.run;
    const calls: ModelToolCall[] = [];
    let text = '';
    const usage = { promptTokens: 0, completionTokens: 0, reported: false };
    for await (const event of turn) {
      this.run.checkGoing();
      if (event.type === 'content') {
        if (event.text.length === 0) continue;
        text += event.text;
        recorder.output(event.text);
        this.run.stream(event.text);
      } else if (event.type === 'tool_call') {
        calls.push(event.call);
      } else {
        usage.promptTokens += event.promptTokens;
        usage.completionTokens += event.completionTokens;
        usage.reported = true;
      }
    }
    this.run.checkGoing();
    const progress = recorder.takeOutput();
    if (usage.reported) {
      const { promptTokens, completionTokens } = usage;
      progress.push({ type: 'UsageRecorded', data: { runId: this.spec.runId, promptTokens, completionTokens } });
    }
    // A turn without tool calls ends the run (or takes a steered prompt): its record goes with the next append.
    if (calls.length === 0) recorder.defer(progress);
    else await recorder.record(progress);
    return { text, calls };
  }

  /** Runs one tool call; returns what the model reads as its result. */
  private async runTool(call: ModelToolCall): Promise<string> {
    const parsed = parseToolCall(call);
    switch (parsed.tool) {
      case 'shell':
        return this.shell(call, parsed.command);
      case 'ask_user':
        return this.askUser(parsed.question);
      case 'unusable':
        return parsed.result;
      default: {
        const unknown: never = parsed;
        throw new Error(`unknown tool call ${JSON.stringify(unknown)}`);
      }
    }
  }

  /** Runs the command in the intern's sandbox once the session's consent policy (or the caller) lets it. */
  private async shell(call: ModelToolCall, command: string): Promise<string> {
    const { recorder } = this.run;
    const { runId } = this.spec;
    const tool = { runId, toolCallId: call.id, tool: 'shell', arguments: call.arguments } as const;
    const before = shellConsent(recorder.state, runId, command);
    const consent = before.decision === 'ask' ? shellAnswer(await this.run.ask(before.question)) : before;
    if (consent.decision === 'cancel') this.run.stopByCaller();
    if (consent.decision === 'refuse') {
      const result = shellRefusal(command, consent.standing);
      await recorder.record([{ type: 'ToolRefused', data: { ...tool, result } }]);
      return result;
    }
    await recorder.record([{ type: 'ToolCalled', data: { ...tool, consent: consent.consent } }]);
    const text = await this.env.runtime.runShell(this.spec.internId, { command, runId, signal: this.run.signal });
    this.run.checkGoing();
    await recorder.record([{ type: 'ToolCompleted', data: { runId, toolCallId: call.id, result: text } }]);
    return text;
  }

  /** The caller's answer as the model reads it; `cancel` ends the run instead. */
  private async askUser(question: ElicitationQuestion): Promise<string> {
    const answer = await this.run.ask(question);
    if (answer.kind === 'elicitation' && answer.answer.action === 'cancel') this.run.stopByCaller();
    return JSON.stringify(answer.kind === 'elicitation' ? answer.answer : { action: 'decline' });
  }
}

/** The conversation a run opens with: the intern's instructions, if any, then the prompt. */
export function openingMessages(spec: Pick<RunSpec, 'instructions' | 'prompt'>): ConversationMessage[] {
  const messages: ConversationMessage[] = [];
  if (spec.instructions) messages.push({ role: 'system', content: spec.instructions });
  messages.push({ role: 'user', content: spec.prompt });
  return messages;
}

/** A model turn of the run over `messages` (without its signal): the run's model, the agent's tools. */
export function modelTurnRequest(spec: Pick<RunSpec, 'model'>, messages: ConversationMessage[]): Omit<ModelTurnRequest, 'signal'> {
  return { model: spec.model, messages, tools: AGENT_TOOL_SPECS };
}
