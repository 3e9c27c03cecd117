/**
 * Answering `service.provide_input` at the terminal (interface section 6). A permission is answered with one of
 * its offered options or `cancel`; a question (elicitation) with `{"action":"accept","content":{...}}`, its fields
 * typed as asked, or `{"action":"decline"}` / `{"action":"cancel"}` (Ctrl-C at a field offers those two).
 */
import type { ElicitationField, ElicitationQuestion, PermissionQuestion, Question } from '@interns/contracts';
import { CANCEL_ANSWER } from '@interns/contracts';
import type { Output } from '../output/output';
import { isPromptExit, type TerminalPrompts } from '../prompts/terminal-prompts';

const OPTION_LABELS: Record<string, string> = {
  allow_once: 'allow once',
  allow_always: 'allow always (this session)',
  reject_once: 'reject once',
  reject_always: 'reject always (this session)',
  [CANCEL_ANSWER]: 'cancel the run',
};

/** The tool message content answering `question`, asked at the terminal. */
export async function askAtTerminal(question: Question, prompts: TerminalPrompts, output: Output): Promise<string> {
  return question.kind === 'permission' ? askPermission(question, prompts) : askElicitation(question, prompts, output);
}

async function askPermission(question: PermissionQuestion, prompts: TerminalPrompts): Promise<string> {
  const choices = [...question.options, CANCEL_ANSWER].map((value) => ({ value, name: OPTION_LABELS[value] ?? value }));
  return prompts.choose(`The intern asks permission: ${question.operation}`, choices);
}

async function askElicitation(question: ElicitationQuestion, prompts: TerminalPrompts, output: Output): Promise<string> {
  output.note(`The intern asks: ${question.message}`);
  const raw: Record<string, string> = {};
  try {
    for (const field of question.fields) {
      const label = `${field.name}${field.type === 'string' ? '' : ` (${field.type})`}${field.required ? '' : ' [optional]'}`;
      raw[field.name] = await prompts.text(label, { validate: (value) => fieldProblem(field, value) ?? true });
    }
  } catch (error) {
    if (!isPromptExit(error)) throw error;
    const action = await prompts.choose('Not answering: tell the intern', [
      { value: 'decline', name: 'decline (the intern goes on without an answer)' },
      { value: 'cancel', name: 'cancel (the run ends)' },
    ]);
    return JSON.stringify({ action });
  }
  return JSON.stringify({ action: 'accept', content: elicitationContent(question.fields, raw) });
}

/** Why a typed value does not fit its field, or null when it does. */
export function fieldProblem(field: ElicitationField, value: string): string | null {
  const text = value.trim();
  if (text === '') return field.required ? `${field.name} is required` : null;
  if (field.type === 'integer' && !/^-?\d+$/.test(text)) return 'an integer, please';
  if (field.type === 'number' && !Number.isFinite(Number(text))) return 'a number, please';
  if (field.type === 'boolean' && !BOOLEAN_WORDS.has(text.toLowerCase())) return 'yes or no, please';
  return null;
}

const TRUE_WORDS = new Set(['y', 'yes', 'true', '1']);
const BOOLEAN_WORDS = new Set([...TRUE_WORDS, 'n', 'no', 'false', '0']);

/** The `content` of an accept: each answered field as its type; blank optional fields left out. */
export function elicitationContent(fields: readonly ElicitationField[], raw: Record<string, string>): Record<string, unknown> {
  const content: Record<string, unknown> = {};
  for (const field of fields) {
    const text = (raw[field.name] ?? '').trim();
    if (text === '' && !field.required) continue;
    if (field.type === 'integer' || field.type === 'number') content[field.name] = Number(text);
    else if (field.type === 'boolean') content[field.name] = TRUE_WORDS.has(text.toLowerCase());
    else content[field.name] = raw[field.name];
  }
  return content;
}

/** A question in one line, for where it cannot be asked. */
export function questionSummary(question: Question): string {
  return question.kind === 'permission'
    ? `permission for ${question.operation} (options: ${question.options.join(', ')})`
    : `${question.message} (fields: ${question.fields.map((field) => field.name).join(', ') || 'none'})`;
}
