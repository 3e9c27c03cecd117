import type { ToolSpec } from '../model-provider';

export const SHELL_TOOL_NAME = 'shell';

/** Runs a command in the intern's workspace; approval-bearing. */
export const SHELL_TOOL_SPEC: ToolSpec = {
  name: SHELL_TOOL_NAME,
  description: "Runs a shell command in the intern's workspace directory and returns its output.",
  parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
};

/** The command of a `shell` call; null when the arguments name none. */
export function parseShellArguments(args: Record<string, unknown>): { command: string } | null {
  return typeof args.command === 'string' ? { command: args.command } : null;
}

/** What the model reads (and the session records) for a shell call it was not allowed to make. */
export function shellRefusal(command: string, standing: boolean): string {
  return `Permission to run \`${command}\` was refused${standing ? ' (standing refusal for this session)' : ''}.`;
}
