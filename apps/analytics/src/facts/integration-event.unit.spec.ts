import { randomUUID } from 'node:crypto';
import { EventData, MalformedEventError, parseIntegrationEvent } from './integration-event';

const encode = (value: unknown) => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));

function message(overrides: Record<string, unknown> = {}) {
  return {
    id: randomUUID(),
    type: 'run.started',
    version: 1,
    created_at: '2030-01-01T00:00:01.000Z',
    workspace_id: null,
    sequence: 2,
    correlation_id: 'c',
    data: { run_id: 'r1' },
    ...overrides,
  };
}

describe('parseIntegrationEvent', () => {
  it('reads a published integration event', () => {
    const sent = message();
    expect(parseIntegrationEvent(encode(sent))).toEqual(sent);
    expect(parseIntegrationEvent(encode(message({ workspace_id: randomUUID() }))).workspace_id).toEqual(expect.any(String));
  });

  it.each([
    ['not JSON', 'nope'],
    ['not an object', [1]],
    ['an id that is not a uuid', message({ id: 'e1' })],
    ['no type', message({ type: '' })],
    ['no version', message({ version: undefined })],
    ['a sequence that is not an integer', message({ sequence: '2' })],
    ['a workspace id that is not a string', message({ workspace_id: 7 })],
    ['data that is not an object', message({ data: null })],
    ['no created_at', message({ created_at: undefined })],
  ])('refuses %s', (_what, value) => {
    expect(() => parseIntegrationEvent(encode(value))).toThrow(MalformedEventError);
  });
});

describe('EventData', () => {
  const data = EventData.of(
    parseIntegrationEvent(encode(message({ data: { run_id: 'r1', tokens: 3, error: null, usage: { prompt_tokens: 'x' } } }))),
  );

  it('reads typed fields and refuses mistyped ones, naming the field', () => {
    expect(data.string('run_id')).toBe('r1');
    expect(data.integer('tokens')).toBe(3);
    expect(data.nullableRecord('error')).toBeNull();
    expect(data.nullableString('missing')).toBeNull();
    expect(() => data.string('tokens')).toThrow(MalformedEventError);
    expect(() => data.integer('run_id')).toThrow(MalformedEventError);
    expect(() => data.record('usage').integer('prompt_tokens')).toThrow(/data\.usage\.prompt_tokens is not an integer/);
  });
});
