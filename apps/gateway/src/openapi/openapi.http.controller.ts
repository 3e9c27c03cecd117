import { createHash } from 'node:crypto';
import { Controller, Get, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OPENAPI_DOCUMENT, OPENAPI_DOCUMENT_PATH } from '@interns/contracts';
import { etagListMatches } from '../interns/intern-icon.reply';

/** The document changes only with a deployment: caches may keep it briefly, then revalidate by ETag. */
const DOCUMENT_CACHE_CONTROL = 'public, max-age=300';
/** Serialized once: the document is constant for the life of the process. */
const DOCUMENT_JSON = JSON.stringify(OPENAPI_DOCUMENT);
const DOCUMENT_ETAG = `"${createHash('sha256').update(DOCUMENT_JSON).digest('hex')}"`;

/**
 * `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of the interface (libs/contracts/src/openapi). Public
 * like the signing keys: it is outside `/interns`, so the admission hook's checks (credential, regional host) leave it alone.
 */
@Controller()
export class OpenApiHttpController {
  @Get(OPENAPI_DOCUMENT_PATH)
  document(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): string | undefined {
    reply.headers({ 'cache-control': DOCUMENT_CACHE_CONTROL, etag: DOCUMENT_ETAG });
    if (etagListMatches(request.headers['if-none-match'], DOCUMENT_ETAG)) {
      reply.code(304);
      return undefined;
    }
    reply.type('application/json; charset=utf-8');
    return DOCUMENT_JSON;
  }
}
