import { isTransactionRace, isUniqueViolation, pgErrorFields } from './pg-errors';

describe('pg errors', () => {
  it('reads the fields of an error object and nothing from anything else', () => {
    expect(pgErrorFields({ code: '23505', constraint: 'names' })).toMatchObject({ code: '23505', constraint: 'names' });
    expect(pgErrorFields(null)).toEqual({});
    expect(pgErrorFields('boom')).toEqual({});
  });

  it('names a unique violation only on its own constraint', () => {
    expect(isUniqueViolation({ code: '23505', constraint: 'names' }, 'names')).toBe(true);
    expect(isUniqueViolation({ code: '23505', constraint: 'other' }, 'names')).toBe(false);
    expect(isUniqueViolation({ code: '23503', constraint: 'names' }, 'names')).toBe(false);
  });

  it('calls serialization failures and deadlocks races, nothing else', () => {
    expect(isTransactionRace({ code: '40001' })).toBe(true);
    expect(isTransactionRace({ code: '40P01' })).toBe(true);
    expect(isTransactionRace({ code: '23505' })).toBe(false);
    expect(isTransactionRace(new Error('x'))).toBe(false);
  });
});
