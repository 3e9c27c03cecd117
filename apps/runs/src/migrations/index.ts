import { CreateSessions1763683200000 } from './1763683200000-create-sessions.migration';

/** In order of application; TypeORM records each by name in `runs.runs_migrations`. */
export const RUNS_MIGRATIONS = [CreateSessions1763683200000];
