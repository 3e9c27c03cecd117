/**
 * Body rules of CONTRACT section 4, decided by the gateway rather than by Fastify's parsers: one catch-all
 * parser hands every body over as a Buffer (Fastify still enforces `bodyLimit`, so 413 comes first), and the
 * route reads it with `jsonBodyOf`, which answers 415 for a non-empty body that is not `application/json`
 * and 400 for anything that is not JSON. The admission hook keeps the Content-Type in the request state
 * and takes the header off the request, so Fastify never refuses a media type on its own. Delete reads an
 * optional body with `optionalJsonBodyOf`; provision and suspend, which take none, use `assertNoCommandBody`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { assertEmptyCommandBody, DomainError, parseRequestJson } from '@interns/contracts';
import type { FreeTextPaths } from '@interns/contracts';

export function installRawBodyParser(fastify: FastifyInstance): void {
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
}

/** `application/json`, with or without parameters such as `charset`. */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semicolon = contentType.indexOf(';');
  const essence = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return essence === 'application/json';
}

function rawBodyOf(request: FastifyRequest): Buffer | null {
  const body = request.body;
  return Buffer.isBuffer(body) && body.length > 0 ? body : null;
}

/**
 * The parsed JSON body of a route that requires one (create, update): 415, then 400, in that order. The 400s
 * include text no service can take (a lone surrogate, NUL outside the route's `freeText` fields) and JSON
 * nested too deep (request-text in contracts).
 */
export function jsonBodyOf(request: FastifyRequest, freeText: FreeTextPaths = []): unknown {
  const raw = rawBodyOf(request);
  if (raw === null) throw new DomainError('invalid_body', 'body must be a JSON object');
  if (!isJsonMediaType(request.gateway?.contentType)) {
    throw new DomainError('unsupported_media_type', 'Content-Type must be application/json');
  }
  return parseRequestJson(raw.toString('utf8'), freeText);
}

/** The parsed JSON body of a route whose body is optional (delete): undefined when empty, else as `jsonBodyOf`. */
export function optionalJsonBodyOf(request: FastifyRequest, freeText: FreeTextPaths = []): unknown {
  return rawBodyOf(request) === null ? undefined : jsonBodyOf(request, freeText);
}

/**
 * Provision and suspend take no body: empty or `{}` whatever the content type, anything else 400. There is
 * no 415 on these routes (the size limit still answers 413 before the route runs).
 */
export function assertNoCommandBody(request: FastifyRequest): void {
  assertEmptyCommandBody(rawBodyOf(request) ?? undefined);
}
