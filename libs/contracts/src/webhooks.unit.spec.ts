import { DomainError } from './errors';
import { type IntegrationEvent, WEBHOOK_EVENT_TYPES } from './integration-events';
import { MAX_WEBHOOK_URL_CHARS, parseCreateWebhookBody, WEBHOOK_DATA_KEYS, webhookPayloadOf } from './webhooks';

function refusal(body: unknown): string {
  try {
    parseCreateWebhookBody(body);
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).reason).toBe('invalid_body');
    return (error as DomainError).message;
  }
  throw new Error('accepted');
}

describe('parseCreateWebhookBody', () => {
  it('accepts a url, one or more event types and an optional description', () => {
    expect(parseCreateWebhookBody({ url: 'https://hooks.example.com/in', events: ['run.completed'] })).toEqual({
      url: 'https://hooks.example.com/in',
      events: ['run.completed'],
    });
    const all = { url: 'http://127.0.0.1:9000/x?y=1', events: [...WEBHOOK_EVENT_TYPES], description: 'ops' };
    expect(parseCreateWebhookBody(all)).toEqual(all);
    expect(parseCreateWebhookBody({ ...all, description: null }).description).toBeNull();
  });

  it.each([
    [[], /body must be a JSON object/],
    ['x', /body must be a JSON object/],
    [{ url: 'https://a.example/', events: ['run.completed'], secret: 'mine' }, /unknown field: secret/],
    [{ events: ['run.completed'] }, /^url: /],
    [{ url: 'not a url', events: ['run.completed'] }, /^url: .*absolute http\(s\) URL/],
    [{ url: 'ftp://a.example/', events: ['run.completed'] }, /^url: /],
    [{ url: 'https://user:pw@a.example/', events: ['run.completed'] }, /without user name or password/],
    [{ url: `https://a.example/${'x'.repeat(MAX_WEBHOOK_URL_CHARS)}`, events: ['run.completed'] }, /at most 2048/],
    [{ url: 'https://a.example/', events: [] }, /at least one event type/],
    [{ url: 'https://a.example/', events: 'run.completed' }, /^events: /],
    [{ url: 'https://a.example/', events: ['run.started'] }, /^events\.0: /],
    [{ url: 'https://a.example/', events: ['run.failed', 'run.failed'] }, /must not repeat/],
    [{ url: 'https://a.example/', events: ['run.failed'], description: 'x'.repeat(501) }, /at most 500/],
    [{ url: 'https://a.example/', events: ['run.failed'], description: 7 }, /^description: /],
  ])('refuses %j', (body, why) => {
    expect(refusal(body)).toMatch(why);
  });
});

describe('webhookPayloadOf', () => {
  const failed: IntegrationEvent<'run.failed'> = {
    id: '0b0c6a2e-1111-4111-8111-111111111111',
    type: 'run.failed',
    version: 1,
    created_at: '2026-01-02T03:04:05.678Z',
    workspace_id: null,
    sequence: 7,
    correlation_id: 'c-1',
    data: {
      intern_id: 'i-1',
      run_id: 'r-1',
      session_id: 's-1',
      origin: 'chat',
      finish_reason: 'error',
      usage: null,
      error: { reason: 'internal_error', message: 'model down' },
    },
  };

  it("keeps the envelope's id, type and time, the workspace, and only the contract's keys of data", () => {
    expect(webhookPayloadOf(failed, 'ws-1')).toEqual({
      id: failed.id,
      type: 'run.failed',
      created_at: failed.created_at,
      workspace_id: 'ws-1',
      data: { intern_id: 'i-1', run_id: 'r-1', session_id: 's-1', origin: 'chat', finish_reason: 'error', usage: null },
    });
  });

  it('names the keys of CONTRACT section 13 for every webhook type', () => {
    expect(WEBHOOK_DATA_KEYS).toEqual({
      'intern.status_changed': ['intern_id', 'status', 'previous_status', 'progress'],
      'run.completed': ['intern_id', 'run_id', 'session_id', 'origin', 'finish_reason', 'usage'],
      'run.failed': ['intern_id', 'run_id', 'session_id', 'origin', 'finish_reason', 'usage'],
      'question.opened': ['intern_id', 'run_id', 'session_id', 'tool_call_id', 'arguments', 'expires_at'],
    });
  });
});
