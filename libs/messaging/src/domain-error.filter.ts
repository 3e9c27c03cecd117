import { ArgumentsHost, Catch, Logger, RpcExceptionFilter } from '@nestjs/common';
import { Observable, throwError } from 'rxjs';
import { DomainError, ServiceErrorPayload } from '@interns/contracts';

/**
 * Services answer refusals as a ServiceErrorPayload in the reply's `err`; anything else is logged and
 * answered as a transient internal error, never with internals.
 */
@Catch()
export class DomainErrorRpcFilter implements RpcExceptionFilter<unknown> {
  private readonly logger = new Logger('Rpc');

  catch(exception: unknown, _host: ArgumentsHost): Observable<ServiceErrorPayload> {
    const payload = serviceErrorPayloadOf(exception, this.logger);
    return throwError(() => payload);
  }
}

/** The `err` a handler's exception is answered with; anything but a DomainError is logged (with `logFields`). */
export function serviceErrorPayloadOf(exception: unknown, logger: Logger, logFields?: Record<string, unknown>): ServiceErrorPayload {
  if (exception instanceof DomainError) return exception.toPayload();
  const line = exception instanceof Error ? (exception.stack ?? exception.message) : String(exception);
  if (logFields === undefined) logger.error(line);
  else logger.error(line, logFields);
  return { kind: 'service_error', reason: 'internal_error', message: 'internal error' };
}
