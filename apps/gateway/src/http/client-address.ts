import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';

/**
 * The socket's peer; with TRUST_FORWARDED_FOR=true the last X-Forwarded-For hop, i.e. what the proxy in front
 * of the gateway saw (earlier hops are whatever the client wrote). Off by default: a client could otherwise
 * name a fresh address per request and never be limited.
 */
export function clientAddressOf(request: FastifyRequest, trustForwardedFor: boolean): string {
  return clientAddressOfMessage(request.raw, trustForwardedFor);
}

/** `clientAddressOf` for a request Fastify never saw (a WebSocket upgrade). */
export function clientAddressOfMessage(request: IncomingMessage, trustForwardedFor: boolean): string {
  const socketAddress = request.socket.remoteAddress ?? 'unknown';
  if (!trustForwardedFor) return socketAddress;
  const forwarded = request.headers['x-forwarded-for'];
  const value = Array.isArray(forwarded) ? forwarded.join(',') : forwarded;
  const last = value?.split(',').map((hop) => hop.trim()).filter((hop) => hop !== '').pop();
  return last ?? socketAddress;
}
