import type { ElicitationQuestion } from '@interns/contracts';
import type { ModelToolCall, ToolSpec } from '../model-provider';
import { ASK_USER_TOOL_NAME, ASK_USER_TOOL_SPEC, parseAskUserArguments } from './ask-user.tool';
import { parseShellArguments, SHELL_TOOL_NAME, SHELL_TOOL_SPEC } from './shell.tool';
import { parseToolArguments } from './tool-arguments';

/** Tool names the loop offers to models. */
export const AGENT_TOOLS = { shell: SHELL_TOOL_NAME, askUser: ASK_USER_TOOL_NAME } as const;

/** The tools offered to the model on every turn. */
export const AGENT_TOOL_SPECS: ToolSpec[] = [SHELL_TOOL_SPEC, ASK_USER_TOOL_SPEC];

/** A model's tool call as the loop acts on it. */
export type AgentToolCall =
  | { tool: 'shell'; command: string }
  | { tool: 'ask_user'; question: ElicitationQuestion }
  /** An unknown tool, or arguments that do not fit its schema: the model reads `result` and may try again. */
  | { tool: 'unusable'; result: string };

export function parseToolCall(call: ModelToolCall): AgentToolCall {
  const args = parseToolArguments(call.arguments);
  if (args !== null && call.name === SHELL_TOOL_NAME) {
    const shell = parseShellArguments(args);
    if (shell !== null) return { tool: 'shell', command: shell.command };
  }
  if (args !== null && call.name === ASK_USER_TOOL_NAME) {
    const question = parseAskUserArguments(args);
    if (question !== null) return { tool: 'ask_user', question };
  }
  return { tool: 'unusable', result: `unknown tool or arguments: ${call.name}` };
}
