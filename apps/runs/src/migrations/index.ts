import { appendFunctionMigration, eventStoreMigration, outboxParkingMigration } from '@interns/event-store';
import { CreateSessions1763683200000 } from './1763683200000-create-sessions.migration';
import { SessionsAndRuns1763683300000 } from './1763683300000-sessions-and-runs.migration';
import { SandboxUsers1763700000000 } from './1763700000000-sandbox-users.migration';
import { RunResources1765000000000 } from './1765000000000-run-resources.migration';
import { TranscriptRetention1766000000000 } from './1766000000000-transcript-retention.migration';
import { WorkspaceDiskLeases1766100000000 } from './1766100000000-workspace-disk-leases.migration';
import { TerminalSessions1766200000000 } from './1766200000000-terminal-sessions.migration';
import { OneRunStatus1766300000000 } from './1766300000000-one-run-status.migration';
import { SessionAppends1766400000000 } from './1766400000000-session-appends.migration';
import { GoingRunsCount1766500000000 } from './1766500000000-going-runs-count.migration';

/** Where the runs service keeps its tables and its event store. */
export const RUNS_SCHEMA = 'runs';

/** In order of application; TypeORM records each by name in `runs.runs_migrations`. */
export const RUNS_MIGRATIONS = [
  CreateSessions1763683200000,
  eventStoreMigration('runs', 1763683250000),
  SessionsAndRuns1763683300000,
  SandboxUsers1763700000000,
  outboxParkingMigration('runs', 1764000000000),
  RunResources1765000000000,
  TranscriptRetention1766000000000,
  WorkspaceDiskLeases1766100000000,
  TerminalSessions1766200000000,
  OneRunStatus1766300000000,
  appendFunctionMigration('runs', 1766350000000),
  SessionAppends1766400000000,
  GoingRunsCount1766500000000,
];
