import { CreateProcessedEvents1763683200000 } from './1763683200000-create-processed-events.migration';
import { CreateFacts1763683400000 } from './1763683400000-create-facts.migration';
import { RunFactsFromIntegrationEvents1763900000000 } from './1763900000000-run-facts-from-integration-events.migration';
import { RunFactsQueryIndex1764000000000 } from './1764000000000-run-facts-query-index.migration';

/** In order of application; TypeORM records each by name in `analytics.analytics_migrations`. */
export const ANALYTICS_MIGRATIONS = [
  CreateProcessedEvents1763683200000,
  CreateFacts1763683400000,
  RunFactsFromIntegrationEvents1763900000000,
  RunFactsQueryIndex1764000000000,
];
