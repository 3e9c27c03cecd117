import type { NatsConnection } from '@nats-io/transport-node';
import { RemoteServiceError, RpcClient, RpcTimeoutError, RpcUnavailableError } from '@interns/messaging';

export const LIFECYCLE_TIMEOUT_MS = 10000;

/**
 * One request to the lifecycle service, its failures put in operator terms. `notFound` names what a
 * `not_found` refusal means for this request.
 */
export async function askLifecycle<Res>(
  nc: NatsConnection,
  subject: string,
  request: unknown,
  notFound: () => string = () => 'not found',
): Promise<Res> {
  try {
    return await new RpcClient(nc).request<Res>(subject, request, { timeoutMs: LIFECYCLE_TIMEOUT_MS });
  } catch (error) {
    if (error instanceof RemoteServiceError && error.payload.reason === 'not_found') {
      throw new Error(notFound(), { cause: error });
    }
    if (error instanceof RpcUnavailableError) throw new Error('lifecycle service is not running', { cause: error });
    if (error instanceof RpcTimeoutError) {
      throw new Error(`lifecycle service did not answer within ${LIFECYCLE_TIMEOUT_MS / 1000} s`, { cause: error });
    }
    throw new Error(`lifecycle service refused: ${(error as Error).message}`, { cause: error });
  }
}
