/**
 * One chat with an intern at the terminal: prompts go to `chat/completions`, chunks are printed as they arrive,
 * questions are asked and answered in the session (a new response follows each answer). `followRun` reads an
 * existing run's stream instead, answering through the run's answer route. A chat response cut short (no
 * `[DONE]`, or `stream_severed`) is resumed from the run's stream after the last chunk seen.
 */
import type { ApprovalMode, ChatChunk, RunResource } from '@interns/contracts';
import { PROVIDE_INPUT_TOOL } from '@interns/contracts';
import { CliError, EXIT } from '../errors';
import { bodyOf, type ApiClient } from '../http/api-client';
import { readSse } from '../http/sse-reader';
import type { Output } from '../output/output';
import type { TerminalPrompts } from '../prompts/terminal-prompts';
import { askAtTerminal, questionSummary } from './questions';
import { readChatStream, type AskedQuestion, type ChatStreamEnd } from './chat-stream';

export interface ChatSettings {
  approvalMode?: ApprovalMode;
  background?: boolean;
  /** How the intern is named in hints (what the user typed). */
  internRef: string;
}

/** What a turn came to: `ok`, an `error` finish (told already), or interrupted by Ctrl-C. */
export type TurnOutcome = 'ok' | 'error' | 'interrupted';

const RUN_ID_HEADER = 'x-run-id';

export class ChatSession {
  sessionId: string | null = null;
  /** Whether the terminal's cursor is at the start of a line (content may end mid-line). */
  private atLineStart = true;

  constructor(
    private readonly client: ApiClient,
    private readonly internId: string,
    private readonly output: Output,
    private readonly prompts: TerminalPrompts,
    private readonly settings: ChatSettings,
  ) {}

  /** Sends one prompt and streams its run to the end, answering its questions. */
  async send(prompt: string): Promise<TurnOutcome> {
    const body: Record<string, unknown> = { stream: true, messages: [{ role: 'user', content: prompt }] };
    if (this.sessionId !== null) body.session_id = this.sessionId;
    if (this.settings.approvalMode !== undefined) body.approval_mode = this.settings.approvalMode;
    if (this.settings.background) body.background = true;
    return this.interruptible((signal) => this.converse(body, signal));
  }

  /** Follows a run's stream from after `afterEventId` (from the start without it), answering its open question. */
  async followRun(runId: string, afterEventId?: string): Promise<TurnOutcome> {
    return this.interruptible((signal) => this.follow(runId, afterEventId, signal));
  }

  private async converse(firstBody: Record<string, unknown>, signal: AbortSignal): Promise<TurnOutcome> {
    let body = firstBody;
    for (;;) {
      const response = await this.client.send('POST', `/interns/${this.internId}/chat/completions`, { json: body, stream: true, signal });
      if (response.status === 202) {
        const steered = (await response.json()) as { session_id: string; status: string };
        this.sessionId = steered.session_id;
        this.output.result(steered, () => this.note('(joined the run already going in this session)'));
        return 'ok';
      }
      const runId = response.headers.get(RUN_ID_HEADER);
      const end = await readChatStream(readSse(bodyOf(response)), this.handlers());
      this.sessionId = end.sessionId ?? this.sessionId;
      if (!end.done || end.error?.metadata?.reason === 'stream_severed') {
        if (runId === null) throw new CliError('the stream was cut and names no run to resume', EXIT.failure, 'stream_severed');
        this.note('(the stream was cut; following the run)');
        return this.follow(runId, end.lastEventId, signal);
      }
      if (end.question === null) return this.finished(end);
      const content = await this.answerFor(end.question, runId);
      body = answerBody(end.question, content);
    }
  }

  private async follow(runId: string, afterEventId: string | undefined, signal: AbortSignal): Promise<TurnOutcome> {
    const path = `/interns/${this.internId}/runs/${runId}`;
    const run = await this.client.get<RunResource>(path);
    this.sessionId = run.session_id;
    const headers = afterEventId === undefined ? undefined : { 'last-event-id': afterEventId };
    const response = await this.client.send('GET', `${path}/stream`, { headers, stream: true, signal });
    const end = await readChatStream(readSse(bodyOf(response)), {
      ...this.handlers(),
      // A replayed question may have been answered long ago: only the run's open one is asked.
      onQuestion: async (asked) => {
        const now = await this.client.get<RunResource>(path);
        if (now.open_question?.tool_call_id !== asked.toolCallId) return;
        const content = await this.answerFor(asked, runId);
        await this.client.json('POST', `${path}/answer`, { json: { tool_call_id: asked.toolCallId, content } });
      },
    });
    if (!end.done) throw new CliError('the run stream ended early; `interns logs` resumes it', EXIT.failure, 'stream_severed');
    return this.finished(end);
  }

  /** Asks at the terminal; without one, the run stays paused and the command ends with exit 6. */
  private async answerFor(asked: AskedQuestion, runId: string | null): Promise<string> {
    this.endLine();
    if (!this.prompts.available) {
      const resume = runId === null ? '' : `; answer with \`interns chat ${this.settings.internRef} --run ${runId}\``;
      throw new CliError(`the intern asks ${questionSummary(asked.question)}${resume}`, EXIT.awaitingInput, 'awaiting_input');
    }
    return askAtTerminal(asked.question, this.prompts, this.output);
  }

  private finished(end: ChatStreamEnd): TurnOutcome {
    this.endLine();
    if (end.finish === 'error') {
      const error = end.error;
      this.note(`error: ${error?.message ?? 'the run failed'}${error?.metadata ? ` (${error.code} ${error.metadata.reason})` : ''}`);
      return 'error';
    }
    if (end.finish === 'length') this.note('(the run reached its tool call limit)');
    return 'ok';
  }

  private handlers(): { onContent: (text: string) => void; onChunk: (chunk: ChatChunk) => void } {
    return {
      onContent: (text) => {
        if (this.output.json) return;
        this.output.text(text);
        this.atLineStart = text.endsWith('\n');
      },
      onChunk: (chunk) => {
        if (this.output.json) this.output.jsonLine(chunk);
      },
    };
  }

  /** Runs `work` with Ctrl-C closing its connection (which cancels the run, unless it runs in the background). */
  private async interruptible(work: (signal: AbortSignal) => Promise<TurnOutcome>): Promise<TurnOutcome> {
    const controller = new AbortController();
    const onInterrupt = () => controller.abort();
    process.on('SIGINT', onInterrupt);
    try {
      return await work(controller.signal);
    } catch (error) {
      if (!controller.signal.aborted) throw error;
      this.endLine();
      this.note(this.settings.background ? '(interrupted; the run goes on in the background)' : '(interrupted; the run is cancelled)');
      return 'interrupted';
    } finally {
      process.removeListener('SIGINT', onInterrupt);
    }
  }

  private endLine(): void {
    if (!this.atLineStart) this.output.text('\n');
    this.atLineStart = true;
  }

  private note(text: string): void {
    this.endLine();
    this.output.note(text);
  }
}

/** The request answering a question in its session: the assistant's call echoed, then the tool message. */
export function answerBody(asked: AskedQuestion, content: string): Record<string, unknown> {
  if (asked.sessionId === null) throw new CliError('the question came without a session id', EXIT.failure, 'bad_stream');
  return {
    stream: true,
    session_id: asked.sessionId,
    messages: [
      { role: 'assistant', content: null, tool_calls: [{ id: asked.toolCallId, type: 'function', function: { name: PROVIDE_INPUT_TOOL, arguments: JSON.stringify(asked.question) } }] },
      { role: 'tool', tool_call_id: asked.toolCallId, content },
    ],
  };
}
