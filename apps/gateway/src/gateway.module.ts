import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { HealthModule } from '@interns/health';
import { ApiExceptionFilter } from './api-exception.filter';
import { GatewayHttpSetup } from './gateway-http.setup';
import { CREDENTIAL_RESOLVER, GATEWAY_CONFIG, GatewayDependencies, RPC_CLIENT } from './gateway.tokens';
import { InternRouteChecks } from './intern-route-checks.hook';
import { InternsHttpController } from './interns.http.controller';
import { LifecycleClient } from './lifecycle.client';

/** The gateway's HTTP surface: `/api/v1/interns` plus health and metrics (outside `/api/v1`). */
@Module({})
export class GatewayModule {
  static forRoot(deps: GatewayDependencies): DynamicModule {
    return {
      module: GatewayModule,
      imports: [HealthModule.forRoot({ service: 'gateway', dataSource: deps.dataSource, nats: () => deps.nats })],
      controllers: [InternsHttpController],
      providers: [
        { provide: GATEWAY_CONFIG, useValue: deps.config },
        { provide: RPC_CLIENT, useValue: deps.rpc },
        { provide: CREDENTIAL_RESOLVER, useValue: deps.resolver },
        { provide: APP_FILTER, useClass: ApiExceptionFilter },
        InternRouteChecks,
        LifecycleClient,
        GatewayHttpSetup,
      ],
    };
  }
}
