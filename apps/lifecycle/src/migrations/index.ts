import { eventStoreMigration, outboxParkingMigration } from '@interns/event-store';
import { InternsReadModel1700000000200 } from './1700000000200-interns-read-model';
import { Provisioning1700000000300 } from './1700000000300-provisioning';
import { DaemonTokens1700000000400 } from './1700000000400-daemon-tokens';
import { VaultSecrets1700000000600 } from './1700000000600-vault-secrets';
import { InternEgressPolicy1700000000700 } from './1700000000700-intern-egress-policy';
import { Door1700000000800 } from './1700000000800-door';

export const LIFECYCLE_SCHEMA = 'lifecycle';
export const lifecycleMigrations = [
  eventStoreMigration(LIFECYCLE_SCHEMA),
  InternsReadModel1700000000200,
  Provisioning1700000000300,
  DaemonTokens1700000000400,
  outboxParkingMigration(LIFECYCLE_SCHEMA, 1700000000500),
  VaultSecrets1700000000600,
  InternEgressPolicy1700000000700,
  Door1700000000800,
];
