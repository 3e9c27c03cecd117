import { CreateEgress1767000000000 } from './1767000000000-create-egress.migration';

/** In order of application; TypeORM records each by name in `egress.egress_migrations`. */
export const EGRESS_MIGRATIONS = [CreateEgress1767000000000];
