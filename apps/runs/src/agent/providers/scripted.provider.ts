import { randomBytes } from 'node:crypto';
import {
  type ConversationMessage,
  type ModelProvider,
  type ModelStreamEvent,
  type ModelToolCall,
  type ModelTurnRequest,
} from '../model-provider';
import { AGENT_TOOLS } from '../tools/agent-tools';

/**
 * The built-in model `local/scripted`: no network, a deterministic function of the conversation. It follows
 * the directives in the last user message, one per line (`/say`, `/shell`, `/ask`, `/sleep`; anything else is
 * echoed). Tool directives split the message into turns: turn k streams the k-th tool result, then the lines
 * up to the next tool directive, then that directive's tool call.
 */
export class ScriptedModelProvider implements ModelProvider {
  async *streamTurn(request: ModelTurnRequest): AsyncIterable<ModelStreamEvent> {
    const { signal } = request;
    signal.throwIfAborted();
    const exchange = currentExchange(request.messages);
    const segment = splitAtToolDirectives(parseDirectives(exchange.userContent))[exchange.toolResults.length];
    const emitted: string[] = [];
    // Pieces of one turn read as lines: every piece after the first starts on a new line.
    const piece = (text: string): ModelStreamEvent => {
      const joined = emitted.length === 0 ? text : `\n${text}`;
      emitted.push(joined);
      return { type: 'content', text: joined };
    };

    const lastToolResult = exchange.toolResults.at(-1);
    // An empty result (a silent command) would only add a blank line.
    if (lastToolResult !== undefined && lastToolResult !== '') yield piece(lastToolResult);
    for (const step of segment?.steps ?? []) {
      if (step.kind === 'sleep') await sleep(step.ms, signal);
      else {
        signal.throwIfAborted();
        yield piece(step.text);
      }
    }
    let toolCallWords = 0;
    if (segment?.tool) {
      signal.throwIfAborted();
      const call: ModelToolCall = { id: `call_${randomBytes(12).toString('hex')}`, ...segment.tool };
      toolCallWords = countWords(call.arguments);
      yield { type: 'tool_call', call };
    }
    yield {
      type: 'usage',
      promptTokens: request.messages.reduce((sum, message) => sum + countWords(message.content), 0),
      completionTokens: emitted.reduce((sum, text) => sum + countWords(text), 0) + toolCallWords,
    };
  }
}

type Step = { kind: 'text'; text: string } | { kind: 'sleep'; ms: number };
type ToolDirective = { kind: 'tool'; name: string; arguments: string };
type Directive = Step | ToolDirective;

interface Segment {
  steps: Step[];
  /** The tool directive that ends the segment; the last segment has none. */
  tool: Omit<ToolDirective, 'kind'> | null;
}

/** The last user message, and the results of the tool calls this run made since. */
function currentExchange(messages: ConversationMessage[]): { userContent: string; toolResults: string[] } {
  const userIndex = messages.findLastIndex((message) => message.role === 'user');
  const toolResults = messages
    .slice(userIndex + 1)
    .flatMap((message) => (message.role === 'tool' ? [message.content] : []));
  return { userContent: userIndex === -1 ? '' : messages[userIndex].content, toolResults };
}

/** setTimeout's delay is a signed 32-bit integer; longer pauses would fire at once. */
const MAX_SLEEP_MS = 2_147_483_647;
const DIRECTIVE = /^\/(say|shell|ask|sleep)\s+(\S.*)$/;

function parseDirectives(content: string): Directive[] {
  return content
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line !== '')
    .map(parseLine);
}

function parseLine(line: string): Directive {
  const match = DIRECTIVE.exec(line);
  const echo: Directive = { kind: 'text', text: line };
  if (match === null) return echo;
  const [, name, argument] = match;
  switch (name) {
    case 'say':
      return { kind: 'text', text: argument };
    case 'shell':
      return { kind: 'tool', name: AGENT_TOOLS.shell, arguments: JSON.stringify({ command: argument }) };
    case 'ask':
      return {
        kind: 'tool',
        name: AGENT_TOOLS.askUser,
        arguments: JSON.stringify({
          message: argument,
          fields: [{ name: 'answer', type: 'string', required: true }],
        }),
      };
    default: {
      // A malformed pause reads as text, like any line the model does not understand.
      if (!/^\d+$/.test(argument)) return echo;
      const ms = Number(argument);
      return ms <= MAX_SLEEP_MS ? { kind: 'sleep', ms } : echo;
    }
  }
}

function splitAtToolDirectives(directives: Directive[]): Segment[] {
  const segments: Segment[] = [{ steps: [], tool: null }];
  for (const directive of directives) {
    const current = segments[segments.length - 1];
    if (directive.kind === 'tool') {
      current.tool = { name: directive.name, arguments: directive.arguments };
      segments.push({ steps: [], tool: null });
    } else current.steps.push(directive);
  }
  return segments;
}

function countWords(text: string): number {
  return text.split(/\s+/).filter((word) => word !== '').length;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
