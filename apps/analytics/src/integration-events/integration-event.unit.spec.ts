import { randomUUID } from 'node:crypto';
import { callerParts, sessionIdOfStream } from '../facts/run-facts.applier';
import { EventData, MalformedEventError, parseIntegrationEvent } from './integration-event';

const encode = (value: unknown) => new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));

function message(overrides: Record<string, unknown> = {}) {
  return {
    event_id: randomUUID(),
    type: 'RunStarted',
    stream_id: 'session-s1',
    stream_version: 2,
    schema_version: 1,
    data: { runId: 'r1', at: '2030-01-01T00:00:00.000Z' },
    metadata: { correlation_id: 'c', causation_id: null, actor: null },
    created_at: '2030-01-01T00:00:01.000Z',
    ...overrides,
  };
}

describe('parseIntegrationEvent', () => {
  it('reads a relayed event', () => {
    const sent = message();
    expect(parseIntegrationEvent(encode(sent))).toEqual(sent);
  });

  it.each([
    ['not JSON', 'nope'],
    ['not an object', [1]],
    ['an event id that is not a uuid', message({ event_id: 'e1' })],
    ['no type', message({ type: '' })],
    ['a stream version that is not an integer', message({ stream_version: '2' })],
    ['data that is not an object', message({ data: null })],
    ['no created_at', message({ created_at: undefined })],
  ])('refuses %s', (_what, value) => {
    expect(() => parseIntegrationEvent(encode(value))).toThrow(MalformedEventError);
  });
});

describe('EventData', () => {
  const data = new EventData(
    parseIntegrationEvent(encode(message({ data: { runId: 'r1', tokens: 3, error: null, changes: { model: null } } }))),
  );

  it('reads typed fields and refuses mistyped ones', () => {
    expect(data.string('runId')).toBe('r1');
    expect(data.integer('tokens')).toBe(3);
    expect(data.nullableRecord('error')).toBeNull();
    expect(data.record('changes').has('model')).toBe(true);
    expect(data.record('changes').nullableString('model')).toBeNull();
    expect(() => data.string('tokens')).toThrow(MalformedEventError);
    expect(() => data.integer('runId')).toThrow(MalformedEventError);
  });

  it("takes the event's own time, else the time it was stored", () => {
    expect(data.at()).toBe('2030-01-01T00:00:01.000Z');
    expect(new EventData(parseIntegrationEvent(encode(message()))).at()).toBe('2030-01-01T00:00:00.000Z');
  });
});

describe('run facts keys', () => {
  it('splits the caller into a user or an API key', () => {
    expect(callerParts('member:alice')).toEqual({ userId: 'alice', apiKeyId: null });
    expect(callerParts('key:k1')).toEqual({ userId: null, apiKeyId: 'k1' });
    expect(callerParts('system')).toEqual({ userId: null, apiKeyId: null });
  });

  it('takes the session id from the stream id', () => {
    expect(sessionIdOfStream('session-abc')).toBe('abc');
  });
});
