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
    if (exception instanceof DomainError) return throwError(() => exception.toPayload());
    this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    return throwError(
      (): ServiceErrorPayload => ({ kind: 'service_error', reason: 'internal_error', message: 'internal error' }),
    );
  }
}
