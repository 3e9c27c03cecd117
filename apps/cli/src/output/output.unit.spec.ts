import { formatTable, shortTime } from './output';

describe('formatTable', () => {
  it('pads columns to their widest cell, shows - for missing values, and keeps one line per row', () => {
    const rows = [{ a: 'x', b: null }, { a: 'longer', b: 'two\nlines' }];
    expect(formatTable(rows, [['A', (row) => row.a], ['B', (row) => row.b]])).toBe(['A       B', 'x       -', 'longer  two lines'].join('\n'));
  });

  it('prints times to the second', () => {
    expect(shortTime('2030-01-02T03:04:05.678Z')).toBe('2030-01-02 03:04:05');
    expect(shortTime(null)).toBe('-');
  });
});
