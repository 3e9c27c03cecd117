import { Controller, Get, Header } from '@nestjs/common';
import { HealthCheck, HealthCheckService } from '@nestjs/terminus';
import { NatsHealthIndicator, PostgresHealthIndicator } from './health.indicators';

@Controller('health')
export class HealthHttpController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly postgres: PostgresHealthIndicator,
    private readonly nats: NatsHealthIndicator,
  ) {}

  /** The process runs and serves HTTP; dependencies are readiness' business, so an outage never restarts it. */
  @Get('live')
  @Header('Cache-Control', 'no-store')
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** 200 when PostgreSQL and NATS work, else 503 with terminus' result (also 503 while shutting down). */
  @Get('ready')
  @HealthCheck()
  ready() {
    return this.health.check([this.postgres.check(), this.nats.check()]);
  }
}
