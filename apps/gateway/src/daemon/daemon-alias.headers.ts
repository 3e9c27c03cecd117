// daemon/: the daemon routes (CONTRACT section 8): an intern's daemon access, request signing, the served signing
// keys, and the headers of the deprecated aliases.
import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { INTERN_ID_PARAM } from '../interns/intern-routes';
import { deprecationHeaders } from './daemon-routes';

/**
 * `Deprecation` and `Link` on every answer of the deprecated aliases, refusals included: an `onSend` hook
 * sees the answers of the admission hook (which end the request before any handler runs) as well as the
 * handler's and the exception filter's.
 */
@Injectable()
export class DaemonAliasHeaders implements OnModuleInit {
  constructor(@Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    fastify.addHook('onSend', async (request, reply, payload) => {
      const params = request.params as Record<string, string | undefined> | undefined;
      const headers = deprecationHeaders(request.routeOptions.url, params?.[INTERN_ID_PARAM]);
      if (headers !== null) reply.headers(headers);
      return payload;
    });
  }
}
