import { CreateIdentityTables1763740000000 } from './1763740000000-create-identity-tables.migration';
import { CreateChatTurnLimits1763800000000 } from './1763800000000-create-chat-turn-limits.migration';
import { CreateAuthFailureLimits1763900000000 } from './1763900000000-create-auth-failure-limits.migration';
import { UnloggedLimitCounters1765100000000 } from './1765100000000-unlogged-limit-counters.migration';
import { CreateAnalyticsQueryLimits1766000000000 } from './1766000000000-create-analytics-query-limits.migration';

/** Every migration of the `identity` schema, oldest first. */
export const identityMigrations = [
  CreateIdentityTables1763740000000,
  CreateChatTurnLimits1763800000000,
  CreateAuthFailureLimits1763900000000,
  UnloggedLimitCounters1765100000000,
  CreateAnalyticsQueryLimits1766000000000,
];
