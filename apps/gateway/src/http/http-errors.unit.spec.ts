import { DomainError } from '@interns/contracts';
import { RemoteServiceError, RpcTimeoutError, RpcUnavailableError } from '@interns/messaging';
import { toHttpError } from './http-errors';

describe('toHttpError', () => {
  it('maps a service refusal to its reason, status and retryability', () => {
    const error = new RemoteServiceError({ kind: 'service_error', reason: 'name_taken', message: 'an intern with this name already exists' });
    expect(toHttpError(error, 10000)).toEqual({
      status: 409,
      body: { error: { code: 409, message: 'an intern with this name already exists', metadata: { reason: 'name_taken', retryable: false } } },
      headers: {},
    });
  });

  it('adds Retry-After to a retryable reason, from a service or a local DomainError', () => {
    const remote = new RemoteServiceError({ kind: 'service_error', reason: 'internal_error', message: 'internal error' });
    expect(toHttpError(remote, 10000)).toMatchObject({ status: 500, headers: { 'retry-after': '1' } });
    expect(toHttpError(new DomainError('rate_limited', 'slow down'), 10000)).toMatchObject({
      status: 429,
      headers: { 'retry-after': '1' },
    });
  });

  it('quotes the route deadline on a timeout', () => {
    expect(toHttpError(new RpcTimeoutError('x.y', 300), 10000).body).toEqual({
      error: { code: 408, message: 'route deadline of 10s exceeded', metadata: { reason: 'timeout', retryable: true } },
    });
    expect(toHttpError(new RpcTimeoutError('x.y', 300), 2500).body.error.message).toBe('route deadline of 2.5s exceeded');
  });

  it('hides anything else behind a retryable internal_error without its message', () => {
    const http = toHttpError(new Error('secret internals'), 10000);
    expect(http.status).toBe(500);
    expect(http.body.error.metadata).toEqual({ reason: 'internal_error', retryable: true });
    expect(JSON.stringify(http.body)).not.toContain('secret internals');
    expect(toHttpError(new RpcUnavailableError('x.y', 'no responders', 'no_responders'), 10000)).toMatchObject({
      status: 500,
      body: { error: { message: 'service unavailable, try again' } },
      headers: { 'retry-after': '1' },
    });
  });
});
