import { Controller, Delete, Get, HttpCode, Inject, Param, Post, Put, Query, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { DomainError, parseVaultCopy, parseVaultListQuery, parseVaultSecretName, parseVaultSecretWrite, VAULT_MAX_BODY_BYTES } from '@interns/contracts';
import type { VaultCopyRequest, VaultDeleteRequest, VaultListRequest, VaultPutRequest, VaultScope, VaultSecret, VaultSecretList } from '@interns/contracts';
import { jsonBodyOf } from '../http/body-rules';
import { visibleId } from '../interns/intern-routes';
import { ServiceClient } from '../service.client';
import { VAULT_INTERN_ID_PARAM, VAULT_NAME_PARAM } from './vault-routes';

const ONE_SECRET = `:${VAULT_NAME_PARAM}`;
const INTERN_SECRETS = `interns/:${VAULT_INTERN_ID_PARAM}/secrets`;
type Query = Record<string, string | string[] | undefined>;

/**
 * HTTP adapter of the vault (interface section 18): a workspace's secrets and an intern's own. The admission hook
 * checked the credential (user and organization keys, OAuth with `interns`; intern keys 404, management keys 401;
 * writes 503 while lifecycle writes are off); the shapes are checked here; lifecycle resolves the vault (a visible
 * intern's, or the caller's workspace's), seals the value and answers metadata only.
 */
@Controller('vault')
export class VaultHttpController {
  constructor(@Inject(ServiceClient) private readonly services: ServiceClient) {}

  @Get('secrets')
  listWorkspace(@Req() request: FastifyRequest, @Query() query: Query): Promise<VaultSecretList> {
    return this.list(request, { kind: 'workspace' }, query);
  }

  @Put(`secrets/${ONE_SECRET}`)
  putWorkspace(@Req() request: FastifyRequest, @Param(VAULT_NAME_PARAM) name: string): Promise<{ data: VaultSecret }> {
    return this.put(request, { kind: 'workspace' }, name);
  }

  @Delete(`secrets/${ONE_SECRET}`)
  @HttpCode(204)
  async deleteWorkspace(@Req() request: FastifyRequest, @Param(VAULT_NAME_PARAM) name: string): Promise<void> {
    await this.delete(request, { kind: 'workspace' }, name);
  }

  @Get(INTERN_SECRETS)
  listIntern(@Req() request: FastifyRequest, @Param(VAULT_INTERN_ID_PARAM) internId: string, @Query() query: Query): Promise<VaultSecretList> {
    return this.list(request, internScope(internId), query);
  }

  @Post(`${INTERN_SECRETS}/copy`)
  @HttpCode(200)
  copy(@Req() request: FastifyRequest, @Param(VAULT_INTERN_ID_PARAM) internId: string): Promise<{ data: VaultSecret[] }> {
    const scope = internScope(internId);
    const { names } = parseVaultCopy(vaultBodyOf(request));
    const payload: VaultCopyRequest = { context: this.services.contextOf(request), internId: scope.internId, names };
    return this.services.request<{ data: VaultSecret[] }>(this.services.subjects.lifecycle.vaultCopy, request, payload);
  }

  @Put(`${INTERN_SECRETS}/${ONE_SECRET}`)
  putIntern(@Req() request: FastifyRequest, @Param(VAULT_INTERN_ID_PARAM) internId: string, @Param(VAULT_NAME_PARAM) name: string): Promise<{ data: VaultSecret }> {
    return this.put(request, internScope(internId), name);
  }

  @Delete(`${INTERN_SECRETS}/${ONE_SECRET}`)
  @HttpCode(204)
  async deleteIntern(@Req() request: FastifyRequest, @Param(VAULT_INTERN_ID_PARAM) internId: string, @Param(VAULT_NAME_PARAM) name: string): Promise<void> {
    await this.delete(request, internScope(internId), name);
  }

  private list(request: FastifyRequest, scope: VaultScope, query: Query): Promise<VaultSecretList> {
    const payload: VaultListRequest = { context: this.services.contextOf(request), scope, query: parseVaultListQuery(query) };
    return this.services.request<VaultSecretList>(this.services.subjects.lifecycle.vaultList, request, payload);
  }

  private put(request: FastifyRequest, scope: VaultScope, name: string): Promise<{ data: VaultSecret }> {
    const payload: VaultPutRequest = {
      context: this.services.contextOf(request),
      scope,
      name: parseVaultSecretName(name),
      body: parseVaultSecretWrite(vaultBodyOf(request)),
    };
    return this.services.request<{ data: VaultSecret }>(this.services.subjects.lifecycle.vaultPut, request, payload);
  }

  private delete(request: FastifyRequest, scope: VaultScope, name: string): Promise<{ deleted: true }> {
    const payload: VaultDeleteRequest = { context: this.services.contextOf(request), scope, name: parseVaultSecretName(name) };
    return this.services.request<{ deleted: true }>(this.services.subjects.lifecycle.vaultDelete, request, payload);
  }
}

/** A non-uuid intern id names no intern: 404, as on intern routes. */
function internScope(internId: string): { kind: 'intern'; internId: string } {
  return { kind: 'intern', internId: visibleId(internId) };
}

/** The body of a vault write: at most VAULT_MAX_BODY_BYTES (413), then JSON as on every route (415, 400). */
function vaultBodyOf(request: FastifyRequest): unknown {
  const body = request.body;
  if (Buffer.isBuffer(body) && body.length > VAULT_MAX_BODY_BYTES) {
    throw new DomainError('payload_too_large', `request body is larger than ${VAULT_MAX_BODY_BYTES} bytes`);
  }
  return jsonBodyOf(request);
}
