import { ELICITATION_FIELD_TYPES } from '@interns/contracts';
import type { ElicitationField, ElicitationQuestion } from '@interns/contracts';
import type { ToolSpec } from '../model-provider';

/** OpenAI tool names allow no dots, hence not `service.provide_input`. */
export const ASK_USER_TOOL_NAME = 'ask_user';

/** Asks the caller a question; becomes a `service.provide_input` elicitation. */
export const ASK_USER_TOOL_SPEC: ToolSpec = {
  name: ASK_USER_TOOL_NAME,
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
};

/** What the intern answers for a caller who is not there (invoke): decline. */
export const FALLBACK_ANSWER = JSON.stringify({ action: 'decline' });

/** The fields of an `ask_user` call that named none. */
export const DEFAULT_ELICITATION_FIELDS: ElicitationField[] = [{ name: 'answer', type: 'string', required: true }];

/**
 * The question of an `ask_user` call; null without a message or with a malformed field. Fields are checked one
 * by one because the question goes to clients as is, under the published ElicitationQuestion schema; `fields`
 * that is not a list at all reads as none given.
 */
export function parseAskUserArguments(args: Record<string, unknown>): ElicitationQuestion | null {
  if (typeof args.message !== 'string') return null;
  if (!Array.isArray(args.fields)) return { kind: 'elicitation', message: args.message, fields: DEFAULT_ELICITATION_FIELDS };
  const fields = args.fields.map(parseField);
  if (fields.some((field) => field === null)) return null;
  return { kind: 'elicitation', message: args.message, fields: fields as ElicitationField[] };
}

function parseField(value: unknown): ElicitationField | null {
  if (typeof value !== 'object' || value === null) return null;
  const { name, type, required } = value as Record<string, unknown>;
  if (typeof name !== 'string' || name === '' || typeof required !== 'boolean') return null;
  if (!(ELICITATION_FIELD_TYPES as readonly unknown[]).includes(type)) return null;
  return { name, type: type as ElicitationField['type'], required };
}
