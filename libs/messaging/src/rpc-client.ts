import { randomUUID } from 'node:crypto';
import { headers as natsHeaders, NatsConnection, RequestError, TimeoutError } from '@nats-io/transport-node';
import {
  CORRELATION_HEADER,
  isServiceErrorPayload,
  RpcReplyPacket,
  RpcRequestPacket,
  ServiceErrorPayload,
} from '@interns/contracts';
import { ConnectionState } from './nats-connection';

/** No reply within the caller's deadline (the service is frozen or overloaded). */
export class RpcTimeoutError extends Error {
  constructor(readonly subject: string, readonly timeoutMs: number) {
    super(`no reply on ${subject} within ${timeoutMs} ms`);
    this.name = 'RpcTimeoutError';
  }
}

/** Nobody serves the subject, or the broker is unreachable: the request did not get anywhere. */
export class RpcUnavailableError extends Error {
  constructor(readonly subject: string, why: string) {
    super(`${subject}: ${why}`);
    this.name = 'RpcUnavailableError';
  }
}

/** The service answered with a refusal (a contract error reason). */
export class RemoteServiceError extends Error {
  constructor(readonly payload: ServiceErrorPayload) {
    super(payload.message);
    this.name = 'RemoteServiceError';
  }
}

/** The service failed without a contract reason (a bug or an unexpected fault on its side). */
export class RemoteFailureError extends Error {
  constructor(readonly subject: string, readonly detail: unknown) {
    super(`${subject} failed: ${typeof detail === 'object' ? JSON.stringify(detail) : String(detail)}`);
    this.name = 'RemoteFailureError';
  }
}

export interface RpcRequestOptions {
  timeoutMs: number;
  correlationId?: string;
}

/**
 * Typed request/reply over one shared NATS connection, speaking the NestJS microservices packet format,
 * so services stay plain `@MessagePattern` handlers. Every request carries a timeout: a frozen service
 * yields RpcTimeoutError, an absent one RpcUnavailableError at once (NATS "no responders").
 */
export class RpcClient {
  private readonly state: ConnectionState;

  constructor(private readonly nc: NatsConnection) {
    this.state = new ConnectionState(nc);
  }

  async request<Res>(subject: string, data: unknown, options: RpcRequestOptions): Promise<Res> {
    if (!this.state.isConnected) throw new RpcUnavailableError(subject, 'message broker unreachable');
    const packet: RpcRequestPacket = { id: randomUUID(), pattern: subject, data };
    const headers = natsHeaders();
    if (options.correlationId) headers.set(CORRELATION_HEADER, options.correlationId);
    let reply;
    try {
      reply = await this.nc.request(subject, JSON.stringify(packet), { timeout: options.timeoutMs, headers });
    } catch (error) {
      throw this.translate(error, subject, options.timeoutMs);
    }
    if (reply.data.length === 0) throw new RpcUnavailableError(subject, 'empty reply');
    const answer = reply.json<RpcReplyPacket<Res>>();
    if (answer.err !== undefined && answer.err !== null) {
      if (isServiceErrorPayload(answer.err)) throw new RemoteServiceError(answer.err);
      throw new RemoteFailureError(subject, answer.err);
    }
    return answer.response as Res;
  }

  private translate(error: unknown, subject: string, timeoutMs: number): Error {
    if (error instanceof TimeoutError) return new RpcTimeoutError(subject, timeoutMs);
    if (error instanceof RequestError) {
      if (error.isNoResponders()) return new RpcUnavailableError(subject, 'no service answers this subject');
      if (error.cause instanceof TimeoutError) return new RpcTimeoutError(subject, timeoutMs);
    }
    if (error instanceof Error) return new RpcUnavailableError(subject, error.message);
    return new RpcUnavailableError(subject, String(error));
  }
}
