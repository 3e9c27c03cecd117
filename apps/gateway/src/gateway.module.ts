import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { subjectsFor } from '@interns/contracts';
import { CredentialResolver } from '@interns/identity';
import { RpcClient, TerminalClient } from '@interns/messaging';
import { HealthModule } from '@interns/service-runtime';
import { AnalyticsQueryLimiter } from './analytics/analytics-query-limiter';
import { AnalyticsHttpController } from './analytics/analytics.http.controller';
import { AuthFailureLimiter } from './auth/auth-failure-limiter';
import { ApiExceptionFilter } from './admission/api-exception.filter';
import { ChatTurnCounter } from './chat/chat-turn-counter';
import { ChatHttpController } from './chat/chat.http.controller';
import { CHAT_DEPENDENCIES } from './chat/chat.tokens';
import type { ChatDependencies } from './chat/chat.tokens';
import { DaemonAliasHeaders } from './daemon/daemon-alias.headers';
import { DaemonHttpController } from './daemon/daemon.http.controller';
import { SigningKeysHttpController } from './daemon/signing-keys.http.controller';
import { DaemonTokenCache } from './door/daemon-token-cache';
import { DoorCacheEvictions } from './door/door-cache-evictions';
import { DoorGate } from './door/door-gate';
import { DoorTerminals } from './door/door-terminals';
import { DoorHosts } from './door/door-host';
import { DoorSignatures } from './door/door-signatures';
import { DoorHandlers } from './door/door.handlers';
import { InternDirectory } from './door/intern-directory';
import { GatewayHttpSetup } from './admission/gateway-http.setup';
import { GATEWAY_CONFIG, GatewayDependencies } from './gateway.tokens';
import { InternsHttpController } from './interns/interns.http.controller';
import { OpenApiHttpController } from './openapi/openapi.http.controller';
import { RequestAdmission } from './admission/request-admission.hook';
import { RunsHttpController } from './runs/runs.http.controller';
import { ServiceClient } from './service.client';
import { WebhooksHttpController } from './webhooks/webhooks.http.controller';
import { VaultHttpController } from './vault/vault.http.controller';
import { EgressPolicyHttpController } from './egress/egress-policy.http.controller';
import { EgressLogHttpController } from './egress/egress-log.http.controller';
import { EventsHttpController } from './events/events.http.controller';
import { WorkspaceEventFeed } from './events/workspace-event-feed';
import { internWorkspaceLookup } from './events/intern-workspace.lookup';
import { FilesHttpController } from './files/files.http.controller';
import { DirectTransferClient } from './files/direct-transfer.client';
import { FileTransferClient } from './files/file-transfer.client';

/**
 * The gateway's HTTP surface: the API under `/api/v1` (the app's global prefix, see api-prefix.ts) plus health
 * and metrics at the root, and each intern's door at its hostname (door/, registered by GatewayHttpSetup). `forRoot` is its composition root (docs/architecture.md, "Dependency injection"):
 * the services are built here; Nest builds the controllers, the exception filter and the two classes that
 * install Fastify hooks through its HTTP adapter.
 */
@Module({})
export class GatewayModule {
  static forRoot(deps: GatewayDependencies): DynamicModule {
    const { config, rpc, resolver } = deps;
    const chat: ChatDependencies = { nats: deps.nats, channel: deps.channel };
    const subjects = subjectsFor(config.natsPrefix);
    const services = new ServiceClient(rpc, config);
    const turns = new ChatTurnCounter(deps.limiter, config.chatTurnsPerMinute);
    // The door (interface section 20): its lookups are cached for AUTH_CACHE_TTL_MS, like credentials.
    const lookups = { rpc, subjects: subjects.lifecycle, ttlMs: config.authCacheTtlMs };
    const directory = new InternDirectory(lookups);
    const tokens = new DaemonTokenCache(lookups);
    const doorHosts = new DoorHosts(config.internDomain);
    const door = { hosts: doorHosts, gate: new DoorGate(directory, tokens, deps.authFailures) };
    const terminals = new DoorTerminals(config, doorHosts, door.gate, () => new TerminalClient(deps.nats, subjects.runs));
    return {
      module: GatewayModule,
      imports: [HealthModule.forRoot({ service: 'gateway', dataSource: deps.dataSource, nats: () => deps.nats })],
      controllers: [
        InternsHttpController,
        EgressPolicyHttpController,
        EgressLogHttpController,
        ChatHttpController,
        RunsHttpController,
        AnalyticsHttpController,
        DaemonHttpController,
        SigningKeysHttpController,
        OpenApiHttpController,
        WebhooksHttpController,
        VaultHttpController,
        FilesHttpController,
        EventsHttpController,
      ],
      providers: [
        { provide: GATEWAY_CONFIG, useValue: config },
        { provide: RpcClient, useValue: rpc },
        { provide: CredentialResolver, useValue: resolver },
        { provide: CHAT_DEPENDENCIES, useValue: chat },
        { provide: ServiceClient, useValue: services },
        { provide: FileTransferClient, useValue: new FileTransferClient(deps.nats, subjects.runs, config.fileTransferStallMs) },
        { provide: DirectTransferClient, useValue: new DirectTransferClient(config.fileTransferStallMs) },
        { provide: ChatTurnCounter, useValue: turns },
        { provide: AuthFailureLimiter, useValue: deps.authFailures },
        { provide: AnalyticsQueryLimiter, useValue: deps.analyticsQueries },
        { provide: RequestAdmission, useValue: new RequestAdmission(config, resolver, deps.authFailures, door) },
        { provide: DoorHosts, useValue: doorHosts },
        { provide: DoorTerminals, useValue: terminals },
        { provide: DoorHandlers, useValue: new DoorHandlers(services, new DoorSignatures(lookups), turns) },
        { provide: DoorCacheEvictions, useValue: new DoorCacheEvictions(deps.nats, subjects, directory, tokens) },
        {
          provide: WorkspaceEventFeed,
          useValue: new WorkspaceEventFeed({ nats: () => deps.nats, subjects, config, lookUpWorkspace: internWorkspaceLookup(rpc, subjects.lifecycle) }),
        },
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
        DaemonAliasHeaders,
        GatewayHttpSetup,
      ],
    };
  }
}
