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
