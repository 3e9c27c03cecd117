import type { MsgHdrs } from '@nats-io/transport-node';
import type { TextMapGetter, TextMapSetter } from '@opentelemetry/api';

/** Reads W3C trace headers (`traceparent`, `tracestate`) from a NATS message's headers. */
export const natsHeadersGetter: TextMapGetter<MsgHdrs> = {
  keys: (headers) => headers.keys(),
  // NATS answers '' for a missing header; the propagator wants undefined.
  get: (headers, key) => headers.get(key) || undefined,
};

/** Writes W3C trace headers into an outgoing NATS request's headers. */
export const natsHeadersSetter: TextMapSetter<MsgHdrs> = {
  set: (headers, key, value) => headers.set(key, value),
};
