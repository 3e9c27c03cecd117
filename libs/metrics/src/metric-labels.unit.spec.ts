import { subjectLabel } from './metric-labels';

describe('subjectLabel', () => {
  it('drops a one-token prefix', () => {
    expect(subjectLabel('interns.lifecycle.qry.get-intern')).toBe('lifecycle.qry.get-intern');
  });

  it('drops a prefix made of several tokens', () => {
    expect(subjectLabel('test_ab12.node-3.runs.cmd.runtime-boot')).toBe('runs.cmd.runtime-boot');
  });

  it('keeps a subject without a prefix whole', () => {
    expect(subjectLabel('analytics.qry.meta')).toBe('analytics.qry.meta');
    expect(subjectLabel('ping')).toBe('ping');
    expect(subjectLabel('')).toBe('');
  });
});
