import { ERROR_REASONS } from './errors';
import { isSessionMessageReply, sessionRefusal, type SessionMessageReply } from './session-messages';

describe('SessionMessageReply', () => {
  it('accepts done and a refusal for every known reason', () => {
    expect(isSessionMessageReply({ ok: true })).toBe(true);
    for (const reason of Object.keys(ERROR_REASONS) as (keyof typeof ERROR_REASONS)[]) {
      expect({ reason, valid: isSessionMessageReply(sessionRefusal(reason, 'refused')) }).toEqual({ reason, valid: true });
    }
  });

  it('builds a refusal as a service error payload, so it is raised again with its reason as it is', () => {
    expect(sessionRefusal('run_not_active', 'the run has already ended')).toEqual({
      ok: false,
      kind: 'service_error',
      reason: 'run_not_active',
      message: 'the run has already ended',
    });
  });

  it.each([
    ['a reason outside ERROR_REASONS (the old `no_run`)', { ok: false, kind: 'service_error', reason: 'no_run', message: 'the run has ended' }],
    ['a refusal shaped as before (no kind)', { ok: false, reason: 'run_not_active', message: 'the run has already ended' }],
    ['a refusal without a message', { ok: false, kind: 'service_error', reason: 'run_not_active' }],
    ['no ok', { kind: 'service_error', reason: 'run_not_active', message: 'x' }],
    ['not an object', 'ok'],
    ['null', null],
  ])('refuses %s', (_label, value) => {
    expect(isSessionMessageReply(value)).toBe(false);
  });

  it('types the reason: only ERROR_REASONS values compile', () => {
    // @ts-expect-error `no_run` is not an ErrorReason (typecheck fails if the reply's reason is widened to string).
    const unknown: SessionMessageReply = { ok: false, kind: 'service_error', reason: 'no_run', message: 'the run has ended' };
    expect(isSessionMessageReply(unknown)).toBe(false);
  });
});
