/**
 * An upload's body is streamed, never buffered (interface section 21: up to FILE_UPLOAD_MAX_BYTES). The gateway's one
 * body parser (body-rules.ts) reads every other body whole under the 1 MiB limit; for the files PUT route this
 * preParsing hook takes the framing headers off the request first, so Fastify sees no body to parse, and keeps them
 * for the route, which reads the raw request stream itself.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { INTERNS_PATH, INTERN_ID_PARAM } from '../interns/intern-routes';

/** The route's pattern as Fastify names it (the wildcard is the path in the workspace). */
export const FILE_ROUTE = `${INTERNS_PATH}/:${INTERN_ID_PARAM}/files/*`;

export interface UploadBody {
  stream: Readable;
  /** Content-Length, or null for a chunked body. */
  length: number | null;
}

const uploads = new WeakMap<FastifyRequest, UploadBody>();

export function passUploadBodyThrough(request: FastifyRequest, _reply: FastifyReply, payload: Readable, done: (error: Error | null, payload?: Readable) => void): void {
  if (request.method !== 'PUT' || request.routeOptions.url !== FILE_ROUTE) {
    done(null, payload);
    return;
  }
  const headers = request.raw.headers;
  const declared = headers['content-length'];
  const chunked = headers['transfer-encoding'] !== undefined;
  if (declared !== undefined || chunked) {
    uploads.set(request, { stream: request.raw, length: declared === undefined || chunked ? null : Number(declared) });
    delete headers['content-length'];
    delete headers['transfer-encoding'];
  }
  done(null, payload);
}

/** The upload's body as the hook kept it: null when the request has none (an empty file). */
export function uploadBodyOf(request: FastifyRequest): UploadBody | null {
  return uploads.get(request) ?? null;
}
