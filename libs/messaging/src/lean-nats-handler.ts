import { Logger } from '@nestjs/common';
import { headers as natsHeaders, type Msg, type MsgHdrs } from '@nats-io/transport-node';
import {
  CORRELATION_HEADER,
  RPC_BODY_REPLY_HEADER,
  RPC_BODY_REPLY_VALUE,
  RpcReplyPacket,
  RpcRequestPacket,
} from '@interns/contracts';
import { serviceErrorPayloadOf } from './domain-error.filter';

/**
 * A request handler served on the lean path: a plain nats.js queue subscription that parses the request
 * packet, calls `handle` and replies with the response body itself (RPC_BODY_REPLY_HEADER), without Nest's
 * per-message pipeline (deserializer, context, interceptor chain, Observable, serializer). For hot reads;
 * Nest still builds and wires the handler (the provider LEAN_NATS_HANDLERS).
 */
export interface LeanNatsHandler<Req = never, Res = unknown> {
  readonly subject: string;
  /**
   * The handling logs or asks other services (a chat turn): its work runs inside the request's AsyncLocalStorage
   * context, so log lines and further requests carry its correlation id, tracing on or off. Hot reads leave it unset.
   */
  readonly entersRequestContext?: boolean;
  handle(request: Req): Promise<Res>;
}

/** Nest provider token for a service's lean handlers (`LeanNatsHandler[]`); bootstrapService's `leanHandlers` reads it. */
export const LEAN_NATS_HANDLERS = Symbol('LEAN_NATS_HANDLERS');

/** What a lean request is known by while it is handled. */
export interface LeanRequest {
  readonly subject: string;
  readonly correlationId: string | undefined;
  readonly headers: MsgHdrs | undefined;
  /** The handler's `entersRequestContext`. */
  readonly entersRequestContext: boolean;
}

/**
 * Wraps each lean handling (metrics, tracing): must call `handle` once and settle as it does. Installed by the
 * service runtime; the default runs the handler as is.
 */
export type LeanRequestObserver = (request: LeanRequest, handle: () => Promise<unknown>) => Promise<unknown>;

const logger = new Logger('Rpc');
const encoder = new TextEncoder();

/** Built once: every body reply carries the same header. */
let bodyReplyHeaders: MsgHdrs | undefined;
function bodyReplyOptions(): { headers: MsgHdrs } {
  if (bodyReplyHeaders === undefined) {
    bodyReplyHeaders = natsHeaders();
    bodyReplyHeaders.set(RPC_BODY_REPLY_HEADER, RPC_BODY_REPLY_VALUE);
  }
  return { headers: bodyReplyHeaders };
}

/**
 * Handles one request message and publishes its reply (a body reply, or an error packet as Nest would send
 * it: `{ err, isDisposed }`). Never rejects. Log lines name the request's `correlation_id` explicitly: no
 * AsyncLocalStorage context is entered here (the observer enters one with tracing on, or when the handler asks).
 */
export async function serveLeanRequest(handler: LeanNatsHandler<unknown>, message: Msg, observe: LeanRequestObserver): Promise<void> {
  const correlationId = message.headers?.get(CORRELATION_HEADER) || undefined;
  const request: LeanRequest = { subject: handler.subject, correlationId, headers: message.headers, entersRequestContext: handler.entersRequestContext === true };
  try {
    const response = await observe(request, () => handler.handle(parseRequestData(message)));
    message.respond(encoder.encode(JSON.stringify(response)), bodyReplyOptions());
  } catch (error) {
    const packet: RpcReplyPacket = {
      err: serviceErrorPayloadOf(error, logger, { correlation_id: correlationId, subject: handler.subject }),
      isDisposed: true,
    };
    message.respond(encoder.encode(JSON.stringify(packet)));
  }
}

function parseRequestData(message: Msg): unknown {
  return message.json<RpcRequestPacket>().data;
}

export const observeNothing: LeanRequestObserver = (_request, handle) => handle();
