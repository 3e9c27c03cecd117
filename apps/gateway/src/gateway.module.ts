import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { HealthModule } from '@interns/health';
import { AnalyticsHttpController } from './analytics/analytics.http.controller';
import { ApiExceptionFilter } from './api-exception.filter';
import { ChatTurnCounter } from './chat/chat-turn-counter';
import { ChatHttpController } from './chat/chat.http.controller';
import { CHAT_DEPENDENCIES } from './chat/chat.tokens';
import { DaemonAliasHeaders } from './daemon/daemon-alias.headers';
import { DaemonHttpController } from './daemon/daemon.http.controller';
import { SigningKeysHttpController } from './daemon/signing-keys.http.controller';
import { GatewayHttpSetup } from './gateway-http.setup';
import { CREDENTIAL_RESOLVER, GATEWAY_CONFIG, GatewayDependencies, RPC_CLIENT } from './gateway.tokens';
import { InternRouteChecks } from './intern-route-checks.hook';
import { InternsHttpController } from './interns.http.controller';
import { OpenApiHttpController } from './openapi/openapi.http.controller';
import { ServiceClient } from './service.client';

/** The gateway's HTTP surface: `/api/v1/interns` plus health and metrics (outside `/api/v1`). */
@Module({})
export class GatewayModule {
  static forRoot(deps: GatewayDependencies): DynamicModule {
    return {
      module: GatewayModule,
      imports: [HealthModule.forRoot({ service: 'gateway', dataSource: deps.dataSource, nats: () => deps.nats })],
      controllers: [
        InternsHttpController,
        ChatHttpController,
        AnalyticsHttpController,
        DaemonHttpController,
        SigningKeysHttpController,
        OpenApiHttpController,
      ],
      providers: [
        { provide: GATEWAY_CONFIG, useValue: deps.config },
        { provide: RPC_CLIENT, useValue: deps.rpc },
        { provide: CREDENTIAL_RESOLVER, useValue: deps.resolver },
        { provide: CHAT_DEPENDENCIES, useValue: { nats: deps.nats, limiter: deps.limiter, channel: deps.channel } },
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
        InternRouteChecks,
        ServiceClient,
        ChatTurnCounter,
        DaemonAliasHeaders,
        GatewayHttpSetup,
      ],
    };
  }
}
