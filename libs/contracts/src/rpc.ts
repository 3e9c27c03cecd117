/**
 * The request/reply wire format on NATS. It is the NestJS microservices NATS packet, so services are
 * plain `@MessagePattern` handlers while callers use the typed client of libs/messaging.
 */
export interface RpcRequestPacket<T = unknown> {
  id: string;
  pattern: string;
  data: T;
}

export interface RpcReplyPacket<T = unknown> {
  id?: string;
  response?: T;
  err?: unknown;
  isDisposed?: boolean;
}

/** NATS header carrying the gateway-minted correlation id across the hop. */
export const CORRELATION_HEADER = 'x-correlation-id';

/**
 * NATS reply header of the lean reply form: the reply's data is the response body itself (JSON), not a
 * packet around it, so a caller with nothing to add (the gateway on hot reads) writes the bytes through
 * unparsed. Refusals and failures are always packets (`err`).
 */
export const RPC_BODY_REPLY_HEADER = 'interns-reply';
export const RPC_BODY_REPLY_VALUE = 'body';
