import type { NatsConnection } from '@nats-io/transport-node';
import type { DataSource } from 'typeorm';
import type { PlatformConfig } from '@interns/contracts';
import type { CredentialResolver } from '@interns/identity';
import type { RpcClient, SessionChannel } from '@interns/messaging';
import type { AnalyticsQueryLimiter } from './analytics/analytics-query-limiter';
import type { AuthFailureLimiter } from './auth/auth-failure-limiter';
import type { ChatTurnLimiter } from './chat/chat-turn-limiter';

/** What the gateway's Nest module is built from: opened once per process by the bootstrap, never per request. */
export interface GatewayDependencies {
  config: PlatformConfig;
  /** The `identity` schema (read by the resolver; probed by readiness). */
  dataSource: DataSource;
  /** The process's one NATS connection, shared by the RPC client and readiness. */
  nats: NatsConnection;
  rpc: RpcClient;
  resolver: CredentialResolver;
  /** The chat turn limiter, its state in the identity schema (shared by every gateway replica). */
  limiter: ChatTurnLimiter;
  /** Analytics queries per organization per minute (identity schema, shared by every gateway replica). */
  analyticsQueries: AnalyticsQueryLimiter;
  /** 401s per client address, counted in the identity schema (shared by every gateway replica). */
  authFailures: AuthFailureLimiter;
  /** Tells a run's owner that its client left. */
  channel: SessionChannel;
}

/** The process's PlatformConfig: an interface, so it needs a token of its own (class instances go by their class). */
export const GATEWAY_CONFIG = Symbol('GATEWAY_CONFIG');
