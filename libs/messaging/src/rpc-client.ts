import { randomUUID } from 'node:crypto';
import { headers as natsHeaders, Msg, MsgHdrs, NatsConnection, RequestError, TimeoutError } from '@nats-io/transport-node';
import {
  CORRELATION_HEADER,
  ERROR_REASONS,
  isServiceErrorPayload,
  RPC_BODY_REPLY_HEADER,
  RPC_BODY_REPLY_VALUE,
  RpcReplyPacket,
  RpcRequestPacket,
  ServiceErrorPayload,
} from '@interns/contracts';
import { currentCorrelationId, endSpan, startNatsClientSpan } from '@interns/observability';
import { ConnectionState } from './nats-connection';
import { recordRpcRequest, RpcErrorReason, RpcOutcome } from './rpc.metrics';

/** No reply within the caller's deadline (the service is frozen or overloaded). */
export class RpcTimeoutError extends Error {
  constructor(readonly subject: string, readonly timeoutMs: number) {
    super(`no reply on ${subject} within ${timeoutMs} ms`);
    this.name = 'RpcTimeoutError';
  }
}

/** Nobody serves the subject, or the broker is unreachable: the request did not get anywhere. */
export class RpcUnavailableError extends Error {
  constructor(
    readonly subject: string,
    why: string,
    /** For metrics: what kept the request from getting anywhere. */
    readonly reason: Extract<RpcErrorReason, 'no_responders' | 'broker_unreachable' | 'empty_reply' | 'transport_error'> = 'transport_error',
  ) {
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
  /** Default: the correlation id of the request being handled (see @interns/observability), if any. */
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

  /** Every request is measured: `interns_nats_request_duration_seconds`, `interns_nats_request_errors_total`. */
  request<Res>(subject: string, data: unknown, options: RpcRequestOptions): Promise<Res> {
    return this.measured(subject, data, options, (reply) => {
      if (isBodyReply(reply)) return reply.json<Res>();
      return responseOf<Res>(subject, reply.json<RpcReplyPacket<Res>>());
    });
  }

  /**
   * The response body's JSON bytes, for a caller that writes them through (the gateway on hot reads): a lean
   * handler's body reply is returned as it came, unparsed; a packet's response is serialized.
   */
  requestBody(subject: string, data: unknown, options: RpcRequestOptions): Promise<Uint8Array> {
    return this.measured(subject, data, options, (reply) => {
      if (isBodyReply(reply)) return reply.data;
      return encoder.encode(JSON.stringify(responseOf(subject, reply.json<RpcReplyPacket>())));
    });
  }

  private async measured<Res>(subject: string, data: unknown, options: RpcRequestOptions, read: (reply: Msg) => Res): Promise<Res> {
    const startedAt = performance.now();
    // Inside a handled request the caller's correlation id and trace travel on without being passed.
    const correlationId = options.correlationId ?? currentCorrelationId();
    const headers = natsHeaders();
    if (correlationId) headers.set(CORRELATION_HEADER, correlationId);
    const span = startNatsClientSpan(subject, headers, correlationId); // undefined (no traceparent) when tracing is off
    try {
      const response = read(await this.exchange(subject, data, options, headers));
      recordRpcRequest(subject, 'ok', startedAt);
      endSpan(span);
      return response;
    } catch (error) {
      recordRpcRequest(subject, outcomeOf(error), startedAt, errorReasonOf(error));
      endSpan(span, error instanceof RemoteServiceError ? { refusal: error.payload.reason } : { error });
      throw error;
    }
  }

  private async exchange(subject: string, data: unknown, options: RpcRequestOptions, headers: MsgHdrs): Promise<Msg> {
    if (!this.state.isConnected) {
      throw new RpcUnavailableError(subject, 'message broker unreachable', 'broker_unreachable');
    }
    const packet: RpcRequestPacket = { id: randomUUID(), pattern: subject, data };
    let reply: Msg;
    try {
      reply = await this.nc.request(subject, JSON.stringify(packet), { timeout: options.timeoutMs, headers });
    } catch (error) {
      throw this.translate(error, subject, options.timeoutMs);
    }
    if (reply.data.length === 0) throw new RpcUnavailableError(subject, 'empty reply', 'empty_reply');
    return reply;
  }

  private translate(error: unknown, subject: string, timeoutMs: number): Error {
    if (error instanceof TimeoutError) return new RpcTimeoutError(subject, timeoutMs);
    if (error instanceof RequestError) {
      if (error.isNoResponders()) return new RpcUnavailableError(subject, 'no service answers this subject', 'no_responders');
      if (error.cause instanceof TimeoutError) return new RpcTimeoutError(subject, timeoutMs);
    }
    if (error instanceof Error) return new RpcUnavailableError(subject, error.message);
    return new RpcUnavailableError(subject, String(error));
  }
}

const encoder = new TextEncoder();

/** A lean handler's reply: the body itself (see RPC_BODY_REPLY_HEADER). */
function isBodyReply(reply: Msg): boolean {
  return reply.headers?.get(RPC_BODY_REPLY_HEADER) === RPC_BODY_REPLY_VALUE;
}

/** A packet's response, or its `err` thrown as a refusal or a failure. */
function responseOf<Res>(subject: string, answer: RpcReplyPacket<Res>): Res {
  if (answer.err !== undefined && answer.err !== null) {
    if (isServiceErrorPayload(answer.err)) throw new RemoteServiceError(answer.err);
    throw new RemoteFailureError(subject, answer.err);
  }
  return answer.response as Res;
}

/** A service's own fault comes back as a 5xx reason (`internal_error`): a failure, not a refusal. */
function isRemoteFault(error: RemoteServiceError): boolean {
  return ERROR_REASONS[error.payload.reason].status >= 500;
}

function outcomeOf(error: unknown): RpcOutcome {
  if (error instanceof RemoteServiceError) return isRemoteFault(error) ? 'failed' : 'refused';
  if (error instanceof RpcTimeoutError) return 'timeout';
  if (error instanceof RpcUnavailableError) return 'unavailable';
  return 'failed';
}

/** Refusals are answers, not errors: undefined. */
function errorReasonOf(error: unknown): RpcErrorReason | undefined {
  if (error instanceof RemoteServiceError) return isRemoteFault(error) ? 'remote_failure' : undefined;
  if (error instanceof RpcTimeoutError) return 'timeout';
  if (error instanceof RpcUnavailableError) return error.reason;
  return 'remote_failure';
}
