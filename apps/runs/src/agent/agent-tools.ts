import { ELICITATION_FIELD_TYPES } from '@interns/contracts';
import type { ElicitationField } from '@interns/contracts';
import { AGENT_TOOLS } from './model-provider';
import type { ToolSpec } from './model-provider';

/** The tools offered to the model on every turn. */
export const AGENT_TOOL_SPECS: ToolSpec[] = [
  {
    name: AGENT_TOOLS.shell,
    description: "Runs a shell command in the intern's workspace directory and returns its output.",
    parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
  {
    name: AGENT_TOOLS.askUser,
    description: 'Asks the caller a question and waits for the answer.',
    parameters: {
      type: 'object',
      properties: {
        message: { type: 'string' },
        fields: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              name: { type: 'string' },
              type: { type: 'string', enum: [...ELICITATION_FIELD_TYPES] },
              required: { type: 'boolean' },
            },
            required: ['name', 'type', 'required'],
          },
        },
      },
      required: ['message'],
    },
  },
];

/** The fields of an `ask_user` call that named none. */
export const DEFAULT_ELICITATION_FIELDS: ElicitationField[] = [{ name: 'answer', type: 'string', required: true }];

/** What the intern answers for a caller who is not there (invoke): decline. */
export const FALLBACK_ANSWER = JSON.stringify({ action: 'decline' });

/** A tool call's JSON arguments as an object; null when they are not one. */
export function parseToolArguments(raw: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(raw);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
