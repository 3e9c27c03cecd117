import { assignments } from './update-assignments';

describe('assignments', () => {
  it('binds every value as a parameter, numbered from $1 in the order given', () => {
    expect(assignments({ status: 'running', ended_at: null, revision_note: 3 })).toEqual({
      sets: ['status = $1', 'ended_at = $2', 'revision_note = $3'],
      values: ['running', null, 3],
    });
  });

  it('JSON-encodes and casts the jsonb columns, keeping null as SQL NULL', () => {
    expect(assignments({ name: 'a', progress: { step: 2 }, open_question: null }, ['progress', 'open_question'])).toEqual({
      sets: ['name = $1', 'progress = $2::jsonb', 'open_question = $3::jsonb'],
      values: ['a', '{"step":2}', null],
    });
  });

  it('gives nothing to set for no changes', () => {
    expect(assignments({})).toEqual({ sets: [], values: [] });
  });

  it('refuses a column name that is not a bare identifier instead of writing it into SQL', () => {
    expect(() => assignments({ 'status = status; DROP TABLE x; --': 1 })).toThrow(/not a column name/);
    expect(() => assignments({ Status: 1 })).toThrow(/not a column name/);
  });
});
