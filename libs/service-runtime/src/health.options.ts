import type { NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import type { ServiceName } from '@interns/contracts';

export interface HealthModuleOptions {
  service: ServiceName;
  /** The service's TypeORM DataSource; readiness runs `SELECT 1` on it. */
  dataSource: DataSource;
  /**
   * The NATS connection(s) the process depends on, read at every probe; null while not (yet) connected.
   * A hybrid service returns both its client connection and its microservice server's connection.
   */
  nats: () => NatsConnection | null | ReadonlyArray<NatsConnection | null>;
  /** Upper bound of each readiness check; default 1000 ms. */
  checkTimeoutMs?: number;
}

export const HEALTH_OPTIONS = Symbol('HEALTH_OPTIONS');
export const DEFAULT_CHECK_TIMEOUT_MS = 1000;
