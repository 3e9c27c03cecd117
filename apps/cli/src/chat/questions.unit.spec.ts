import type { ElicitationField } from '@interns/contracts';
import { elicitationContent, fieldProblem, questionSummary } from './questions';

const fields: ElicitationField[] = [
  { name: 'answer', type: 'string', required: true },
  { name: 'count', type: 'integer', required: false },
  { name: 'ratio', type: 'number', required: false },
  { name: 'sure', type: 'boolean', required: true },
];

describe('elicitation answers', () => {
  it('types each field as asked and leaves blank optional fields out', () => {
    expect(elicitationContent(fields, { answer: ' Ada ', count: '3', ratio: '', sure: 'yes' })).toEqual({ answer: ' Ada ', count: 3, sure: true });
    expect(elicitationContent(fields, { answer: 'x', count: '', ratio: '0.5', sure: 'no' })).toEqual({ answer: 'x', ratio: 0.5, sure: false });
  });

  it('says what is wrong with a typed value', () => {
    expect(fieldProblem(fields[0], '  ')).toBe('answer is required');
    expect(fieldProblem(fields[1], '')).toBeNull();
    expect(fieldProblem(fields[1], '2.5')).toBe('an integer, please');
    expect(fieldProblem(fields[2], 'abc')).toBe('a number, please');
    expect(fieldProblem(fields[3], 'maybe')).toBe('yes or no, please');
    expect(fieldProblem(fields[3], 'Y')).toBeNull();
  });

  it('sums a question up in one line', () => {
    expect(questionSummary({ kind: 'permission', operation: 'shell: ls', options: ['allow_once', 'reject_once'] })).toBe(
      'permission for shell: ls (options: allow_once, reject_once)',
    );
    expect(questionSummary({ kind: 'elicitation', message: 'Name?', fields: [fields[0]] })).toBe('Name? (fields: answer)');
  });
});
