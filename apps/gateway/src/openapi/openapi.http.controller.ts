import { createHash } from 'node:crypto';
import { Controller, Get, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OPENAPI_DOCUMENT, OPENAPI_DOCUMENT_PATH } from '@interns/contracts/openapi';
import { etagListMatches } from '../interns/intern-icon.reply';

/** The document changes only with a deployment: caches may keep it briefly, then revalidate by ETag. */
const DOCUMENT_CACHE_CONTROL = 'public, max-age=300';

interface SerializedDocument {
  json: string;
  etag: string;
}

let serialized: SerializedDocument | null = null;

/**
 * Serialized once, at the first request rather than at start (a gateway nobody asks for it need not hold the
 * 300 KB text): the document is constant for the life of the process.
 */
function serializedDocument(): SerializedDocument {
  if (serialized === null) {
    const json = JSON.stringify(OPENAPI_DOCUMENT);
    serialized = { json, etag: `"${createHash('sha256').update(json).digest('hex')}"` };
  }
  return serialized;
}

/**
 * `GET /api/v1/openapi.json`: the OpenAPI 3.1 document of the interface (libs/contracts/src/openapi). Public
 * like the signing keys: it is outside `/interns`, so the admission hook's checks (credential, regional host) leave it alone.
 */
@Controller()
export class OpenApiHttpController {
  @Get(OPENAPI_DOCUMENT_PATH)
  document(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): string | undefined {
    const { json, etag } = serializedDocument();
    reply.headers({ 'cache-control': DOCUMENT_CACHE_CONTROL, etag });
    if (etagListMatches(request.headers['if-none-match'], etag)) {
      reply.code(304);
      return undefined;
    }
    reply.type('application/json; charset=utf-8');
    return json;
  }
}
