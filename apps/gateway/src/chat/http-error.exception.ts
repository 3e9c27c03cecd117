import type { HttpError } from '../http/http-errors';

/** An answer the gateway decided whole (status, envelope, headers), e.g. 429 with the limiter's Retry-After. */
export class HttpErrorException extends Error {
  constructor(readonly httpError: HttpError) {
    super(httpError.body.error.message);
    this.name = 'HttpErrorException';
  }
}
