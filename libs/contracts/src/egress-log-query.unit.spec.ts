import { DomainError } from './errors';
import { parseEgressLogQuery } from './validation';

function refusal(query: Record<string, string | string[]>): string {
  try {
    parseEgressLogQuery(query);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).reason).toBe('invalid_body');
    return (error as DomainError).message;
  }
  throw new Error(`accepted ${JSON.stringify(query)}`);
}

describe('parseEgressLogQuery', () => {
  it('defaults to 50 entries from the newest, and ignores unknown parameters', () => {
    expect(parseEgressLogQuery({ status: 'denied', verbose: '1' })).toEqual({ limit: 50, startingAfter: null });
  });

  it('takes a limit of 1 to 500 and the cursor as given (the egress service judges it)', () => {
    expect(parseEgressLogQuery({ limit: '1', starting_after: 'abc.def' })).toEqual({ limit: 1, startingAfter: 'abc.def' });
    expect(parseEgressLogQuery({ limit: '500' }).limit).toBe(500);
  });

  it.each(['0', '501', 'abc', '1.5', '-1', '', ' 5'])('refuses limit=%j naming the range', (limit) => {
    expect(refusal({ limit })).toBe('limit must be an integer 1-500');
  });

  it('refuses an empty cursor, and a parameter given twice', () => {
    expect(refusal({ starting_after: '' })).toBe('starting_after is not a valid cursor');
    expect(refusal({ limit: ['5', '6'] })).toBe('limit may be given once');
    expect(refusal({ starting_after: ['a', 'b'] })).toBe('starting_after may be given once');
  });
});
