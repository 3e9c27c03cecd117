import { Inject, Injectable } from '@nestjs/common';
import { HealthIndicatorService } from '@nestjs/terminus';
import { natsReadiness } from './nats-readiness';
import { DEFAULT_CHECK_TIMEOUT_MS, HEALTH_OPTIONS } from './health.options';
import type { HealthModuleOptions } from './health.options';

/*
 * Terminus' TypeOrmHealthIndicator needs @nestjs/typeorm, which the platform does not use, and it has no
 * NATS indicator for nats.js v3; these two are small custom indicators on its HealthIndicatorService.
 */

@Injectable()
export class PostgresHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    @Inject(HEALTH_OPTIONS) private readonly options: HealthModuleOptions,
  ) {}

  /** Up when `SELECT 1` returns in time (a full or hung pool counts as down). */
  check(key = 'database') {
    return this.indicators
      .check(key)
      .attempt(async () => {
        await this.options.dataSource.query('SELECT 1');
      })
      .withTimeout(this.options.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS);
  }
}

@Injectable()
export class NatsHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    @Inject(HEALTH_OPTIONS) private readonly options: HealthModuleOptions,
  ) {}

  /** Up when every connection exists, is neither closed, draining nor reconnecting, and answers a PING. */
  check(key = 'nats') {
    return this.indicators
      .check(key)
      .attempt(async () => {
        const connections = [this.options.nats()].flat();
        for (const nc of connections) {
          if (nc === null) throw new Error('not connected');
          const readiness = natsReadiness(nc);
          if (!readiness.isReady()) throw new Error(`connection ${readiness.state()}`);
        }
        // A round trip to the server: status events can lag behind a silently dead socket.
        await Promise.all(connections.map((nc) => nc?.flush()));
        return { connections: connections.length };
      })
      .withTimeout(this.options.checkTimeoutMs ?? DEFAULT_CHECK_TIMEOUT_MS);
  }
}
