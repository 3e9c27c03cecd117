import { performance } from 'node:perf_hooks';
import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { subjectsFor } from '@interns/contracts';
import type { DaemonSigningKeysReply, PlatformConfig } from '@interns/contracts';
import { RpcClient, RpcTimeoutError } from '@interns/messaging';
import { GATEWAY_CONFIG } from '../gateway.tokens';

/** Public keys change only with a key rotation; daemons may cache them briefly. */
const JWKS_CACHE_CONTROL = 'public, max-age=300';

/**
 * `GET /api/v1/daemon/signing-keys`: the JWKS daemons verify signed invokes with. Public (outside `/interns`,
 * so no credential is asked for); lifecycle, which holds the private key, answers with the public half.
 */
@Controller('daemon')
export class SigningKeysHttpController {
  private readonly subject: string;

  constructor(
    @Inject(RpcClient) private readonly rpc: RpcClient,
    @Inject(GATEWAY_CONFIG) private readonly config: PlatformConfig,
  ) {
    this.subject = subjectsFor(config.natsPrefix).lifecycle.daemonSigningKeys;
  }

  @Get('signing-keys')
  async keys(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<DaemonSigningKeysReply> {
    // The route deadline runs from arrival, as on every route (the admission hook stamped it).
    const state = request.gateway;
    const deadlineMs = state?.routeDeadlineMs ?? this.config.lifecycleRouteDeadlineMs;
    const remainingMs = state === null ? deadlineMs : deadlineMs - (performance.now() - state.arrivedAt);
    if (remainingMs < 1) throw new RpcTimeoutError(this.subject, 0);
    const jwks = await this.rpc.request<DaemonSigningKeysReply>(
      this.subject,
      {},
      { timeoutMs: Math.floor(remainingMs), ...(state === null ? {} : { correlationId: state.correlationId }) },
    );
    reply.header('cache-control', JWKS_CACHE_CONTROL);
    return jwks;
  }
}
