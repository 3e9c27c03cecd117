import { DynamicModule, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthHttpController } from './health.http.controller';
import { NatsHealthIndicator, PostgresHealthIndicator } from './health.indicators';
import { HEALTH_OPTIONS, HealthModuleOptions } from './health.options';
import { enableDefaultMetrics, gauge } from './metrics';
import { MetricsHttpController } from './metrics.http.controller';

/** `GET /health/live`, `GET /health/ready` and `GET /metrics` (CONTRACT section 11) for one service process. */
@Module({})
export class HealthModule {
  static forRoot(options: HealthModuleOptions): DynamicModule {
    enableDefaultMetrics();
    gauge({ name: 'interns_service_info', help: 'Which platform service this process runs', labelNames: ['service'] })
      .labels({ service: options.service })
      .set(1);
    return {
      module: HealthModule,
      imports: [TerminusModule.forRoot()],
      controllers: [HealthHttpController, MetricsHttpController],
      providers: [{ provide: HEALTH_OPTIONS, useValue: options }, PostgresHealthIndicator, NatsHealthIndicator],
    };
  }
}
