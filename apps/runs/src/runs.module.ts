import { DynamicModule, Logger, Module, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { pingNatsController } from '@interns/service-runtime';
import type { ServiceDeps } from '@interns/service-runtime';
import { CursorCodec } from '@interns/contracts';
import { IntegrationEventsRelay, PostgresEventStore } from '@interns/event-store';
import { LEAN_NATS_HANDLERS, SessionChannel } from '@interns/messaging';
import { ModelProviders } from './agent/model-providers';
import { chatLeanHandlers } from './chat/chat.lean-handlers';
import { InternLookup } from './chat/intern-lookup';
import { sessionEventsTranslator } from './integration-events/session-integration-events';
import { TurnsService } from './chat/turns.service';
import { runResourcesNatsController } from './run-resources/run-resources.nats.controller';
import { RunResourcesService } from './run-resources/run-resources.service';
import { retentionNatsController } from './retention/retention.nats.controller';
import { TranscriptPurger } from './retention/transcript-purger';
import { TranscriptRetentionSweeper } from './retention/transcript-retention.sweeper';
import { ensureRunChunkStream } from './runs/run-chunk-log';
import { RunHost } from './runs/run-host';
import { OrphanReaper } from './runs/orphan-reaper';
import { LocalRuntimeDriver } from './runtime/local-runtime.driver';
import { ModelCatalog } from './runtime/model-catalog';
import { RuntimeModule } from './runtime.module';
import { BubblewrapShell } from './runtime/shell/bubblewrap-shell';
import { shellRunnerFor } from './runtime/shell/shell-runner.factory';
import { workspaceDisksFor } from './runtime/workspace-disks';
import { PostgresWorkspaceDiskLeases } from './runtime/workspace-disk-leases';
import type { ShellRunner } from './runtime/shell/shell-runner';
import { sessionReadModelProjection } from './sessions/session-read-model.projection';
import { SessionStreams } from './sessions/session-streams';
import { filesNatsController } from './files/files.nats.controller';
import { FilesService } from './files/files.service';
import { DirectTransfers } from './files/direct-transfers';
import { FileTransfers } from './files/file-transfers';
import { TransferSlots } from './files/transfer-slots';
import { WorkspaceFiles } from './files/workspace-files';
import { TerminalAudit } from './terminals/terminal-audit';
import { TerminalHost } from './terminals/terminal-host';
import { TerminalSessions } from './terminals/terminal-sessions';
import { terminalsNatsController } from './terminals/terminals.nats.controller';

/**
 * Ends this replica's runs, file transfers and terminals before the connections close, so attached clients hear why;
 * then detaches the workspace disks it attached (the next replica to use one attaches it again).
 */
class RunsShutdown implements OnApplicationShutdown {
  constructor(
    private readonly host: RunHost,
    private readonly driver: LocalRuntimeDriver,
    private readonly transfers: FileTransfers,
    private readonly direct: DirectTransfers | null,
    private readonly terminals: TerminalHost,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.host.shutdown();
    await this.transfers.closeAll();
    await this.direct?.close();
    await this.terminals.closeAll();
    await this.driver.detachDisks();
  }
}

/** Builds one sandbox at start, so a host that cannot sandbox is named in the log before any intern's shell meets it. */
class SandboxSelfTest implements OnApplicationBootstrap {
  private readonly logger = new Logger('Sandbox');

  constructor(private readonly shell: ShellRunner) {}

  async onApplicationBootstrap(): Promise<void> {
    if (!(this.shell instanceof BubblewrapShell)) return;
    const problem = await this.shell.selfTest().catch((error: unknown) => `sandbox self-test failed: ${(error as Error).message}`);
    if (problem === null) this.logger.log('shell sandbox ready (bubblewrap)');
    else this.logger.error(`${problem}; the shell tool refuses every command until this is fixed`);
  }
}

/** The run chunk stream exists (with its current limits) before the first run writes to it. */
class RunChunkStreamSetup implements OnApplicationBootstrap {
  constructor(private readonly setUp: () => Promise<void>) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.setUp();
  }
}

/** Runs' root module. `forRoot` builds the services; Nest builds only the controllers (docs/architecture.md, "Dependency injection"). */
@Module({})
export class RunsModule {
  static forRoot(deps: ServiceDeps): DynamicModule {
    const { config, subjects, nc, dataSource } = deps;
    const catalog = new ModelCatalog({ defaultModel: config.defaultModel, openAiCompatibleBaseUrl: config.modelApiBaseUrl });
    const disks = workspaceDisksFor(
      config.workspaceDisk,
      config.dataDir,
      { bytes: config.workspaceQuotaBytes, inodes: config.workspaceQuotaInodes },
      new PostgresWorkspaceDiskLeases(dataSource),
    );
    const shell = shellRunnerFor(config, dataSource, LocalRuntimeDriver.workspacesDirOf(config.dataDir), disks, nc, subjects);
    const driver = new LocalRuntimeDriver({
      disks,
      dataDir: config.dataDir,
      archiveDir: config.archiveDir,
      archiveTimeoutMs: config.archiveTimeoutMs,
      catalog,
      shell,
    });
    const store = new PostgresEventStore(dataSource, {
      schema: 'runs',
      projections: [sessionReadModelProjection],
      maxEventBytes: config.maxEventBytes,
    });
    const streams = new SessionStreams(store);
    const host = new RunHost(
      { nc, subjects, streams, runtime: driver, settings: config },
      new SessionChannel(nc, subjects.runs),
      dataSource,
      { maxRunsPerIntern: config.maxRunsPerIntern, reconcileIntervalMs: config.runReconcileIntervalMs },
    );
    const models = new ModelProviders({
      catalog,
      baseUrl: config.modelApiBaseUrl,
      apiKey: config.modelApiKey,
      requestTimeoutMs: config.modelRequestTimeoutMs,
    });
    const interns = new InternLookup({ nc, subjects, dataSource, ttlMs: config.authCacheTtlMs });
    const turns = new TurnsService(host, streams, interns, models);
    const relay = new IntegrationEventsRelay({
      service: 'runs',
      schema: 'runs',
      dataSource,
      nats: nc,
      subjects,
      translator: sessionEventsTranslator('runs'),
      streamLimits: { maxAgeMs: config.jetstreamMaxAgeMs, maxBytes: config.jetstreamMaxBytes, replicas: config.jetstreamReplicas },
      logger: new Logger('IntegrationEventsRelay'),
    });
    const purger = new TranscriptPurger(dataSource, nc, subjects);
    const transfers = new FileTransfers(nc, subjects.runs, config.fileTransferStallMs);
    // FILE_TRANSFER_PORT 0: bodies over NATS only.
    const direct =
      config.fileTransferPort === 0
        ? null
        : new DirectTransfers({ host: config.fileTransferHost, port: config.fileTransferPort, advertisedHost: config.fileTransferAdvertisedHost, stallMs: config.fileTransferStallMs });
    const files = new FilesService(
      interns,
      new WorkspaceFiles({ workspaceOf: (internId) => driver.attachedWorkspace(internId), shell, disks }),
      transfers,
      new TransferSlots(config.fileTransfersPerReplica),
      direct,
    );
    const terminals = new TerminalHost(
      nc,
      subjects.runs,
      new TerminalSessions(dataSource),
      new TerminalAudit(nc, subjects.lifecycle),
      driver,
      // RUNTIME_SANDBOX=off has no sandbox to open a terminal in: terminals are refused, never opened on the host.
      shell instanceof BubblewrapShell ? shell : null,
      { perIntern: config.terminalsPerIntern, idleMs: config.terminalIdleMs },
    );
    return {
      module: RunsModule,
      imports: [RuntimeModule.forRoot({ subjects, driver, host, terminals })],
      controllers: [
        pingNatsController('runs', subjects.runs.ping),
        runResourcesNatsController(subjects.runs),
        retentionNatsController(subjects.runs),
        filesNatsController(subjects.runs),
        terminalsNatsController(subjects.runs),
      ],
      providers: [
        { provide: RunChunkStreamSetup, useValue: new RunChunkStreamSetup(() => ensureRunChunkStream(nc, subjects, config)) },
        { provide: TurnsService, useValue: turns },
        { provide: LEAN_NATS_HANDLERS, useValue: chatLeanHandlers(subjects.runs, turns) },
        // Its subscription to lifecycle's intern notices opens and closes with the application.
        { provide: InternLookup, useValue: interns },
        {
          provide: RunResourcesService,
          // Awaits the cursor secret, which every replica shares through the database.
          useFactory: async () => {
            const [row] = await dataSource.query(`SELECT value FROM runs.settings WHERE name = 'cursor_secret'`);
            return new RunResourcesService(dataSource, interns, new CursorCodec(row.value), host, streams, turns, subjects, config.runReplayRetentionMs);
          },
        },
        // Its reconciler round starts with the application and stops with it.
        { provide: OrphanReaper, useValue: host.reaper },
        { provide: TranscriptPurger, useValue: purger },
        { provide: TranscriptRetentionSweeper, useValue: new TranscriptRetentionSweeper(purger, dataSource, config.transcriptRetentionMs) },
        { provide: SandboxSelfTest, useValue: new SandboxSelfTest(shell) },
        { provide: FilesService, useValue: files },
        { provide: TerminalHost, useValue: terminals },
        // Listens once the application starts (onApplicationBootstrap); closed by RunsShutdown.
        ...(direct === null ? [] : [{ provide: DirectTransfers, useValue: direct }]),
        { provide: RunsShutdown, useValue: new RunsShutdown(host, driver, transfers, direct, terminals) },
        { provide: IntegrationEventsRelay, useValue: relay },
      ],
    };
  }
}
