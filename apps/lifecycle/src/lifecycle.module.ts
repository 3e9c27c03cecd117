import { CursorCodec } from '@interns/contracts';
import { DynamicModule, Logger, Module } from '@nestjs/common';
import { IntegrationEventsRelay, PostgresEventStore } from '@interns/event-store';
import { LEAN_NATS_HANDLERS } from '@interns/messaging';
import { INTERN_EVENT_UPCASTERS } from '@interns/lifecycle-domain';
import type { ServiceDeps } from '@interns/service-runtime';
import { LeaderLease, WorkSignal } from '@interns/workers';
import { ChatappInstallsService } from './interns/chatapp-installs.service';
import { projectDaemonTokenRevocation } from './daemon/daemon-token-revocation.projection';
import { DaemonModule } from './daemon/daemon.module';
import { doorLeanHandlers } from './daemon/door.lean-handlers';
import { DoorService } from './daemon/door.service';
import { internEventsTranslator } from './integration-events/intern-integration-events';
import { LIFECYCLE_SCHEMA } from './migrations';
import { ProvisioningProcessManager } from './provisioning/provisioning.process-manager';
import { RuntimeDriverClient } from './provisioning/runtime-driver.client';
import { InternCommandsService } from './interns/intern-commands.service';
import { InternQueriesService } from './interns/intern-queries.service';
import { InternStreams } from './interns/intern-streams';
import { projectInternSummary } from './interns/intern-summary.projection';
import { InternTransitionsService } from './interns/intern-transitions.service';
import { internsNatsController } from './interns/interns.nats.controller';
import { internsLeanHandlers } from './interns/interns.lean-handlers';
import { VaultModule } from './vault/vault.module';

/** Advisory lock of the process manager's leader (distinct from the relay's). */
const PROCESS_MANAGER_LOCK: [string, string] = ['process-manager', `${LIFECYCLE_SCHEMA}/provisioning`];

/**
 * Lifecycle's root module: the intern aggregate, its read model, provisioning and the daemon routes. `forRoot`
 * builds the services; Nest builds only the controllers (docs/architecture.md, "Dependency injection").
 */
@Module({})
export class LifecycleModule {
  static forRoot({ dataSource, nc, config, subjects }: ServiceDeps): DynamicModule {
    const signal = new WorkSignal();
    const store = new PostgresEventStore(dataSource, {
      schema: LIFECYCLE_SCHEMA,
      projections: [projectInternSummary, projectDaemonTokenRevocation],
      upcasters: [...INTERN_EVENT_UPCASTERS],
      maxEventBytes: config.maxEventBytes,
    });
    const streams = new InternStreams(store, () => signal.notify(), (internId) => noticeInternChanged(nc, subjects, internId));
    const installs = new ChatappInstallsService(dataSource, streams);
    const relay = new IntegrationEventsRelay({
      service: 'lifecycle',
      schema: LIFECYCLE_SCHEMA,
      dataSource,
      nats: nc,
      subjects,
      translator: internEventsTranslator(),
      streamLimits: { maxAgeMs: config.jetstreamMaxAgeMs, maxBytes: config.jetstreamMaxBytes, replicas: config.jetstreamReplicas },
      // An intern's change reaches /events, webhooks and analytics without waiting for the next poll (intern
      // events are few; runs' relay keeps polling, where a wake per session append would cost a round per event).
      signal,
      logger: new Logger('IntegrationEventsRelay'),
    });
    const processManager = new ProvisioningProcessManager({
      dataSource,
      lease: new LeaderLease(dataSource, PROCESS_MANAGER_LOCK),
      streams,
      installs,
      driver: new RuntimeDriverClient(nc, subjects.runs, config.archiveTimeoutMs, subjects.egress.purgeLog),
      signal,
      concurrency: config.provisionConcurrency,
      concurrencyPerWorkspace: config.provisionConcurrencyPerWorkspace,
      stepDelayMs: config.provisionStepDelayMs,
      internDomain: config.internDomain,
      healthTimeoutMs: config.runtimeHealthTimeoutMs,
      stopAttempts: config.runtimeStopAttempts,
      logger: new Logger('ProvisioningProcessManager'),
    });
    const door = new DoorService(dataSource);
    return {
      module: LifecycleModule,
      imports: [DaemonModule.forRoot({ dataSource, config, subjects }, door), VaultModule.forRoot({ dataSource, config, subjects })],
      controllers: [internsNatsController(subjects.lifecycle)],
      providers: [
        { provide: IntegrationEventsRelay, useValue: relay },
        { provide: ChatappInstallsService, useValue: installs },
        { provide: InternCommandsService, useValue: new InternCommandsService(dataSource, streams, installs, {
          maxInternsPerWorkspace: config.maxInternsPerWorkspace,
        }) },
        { provide: InternTransitionsService, useValue: new InternTransitionsService(dataSource, streams, installs) },
        { provide: ProvisioningProcessManager, useValue: processManager },
        {
          provide: InternQueriesService,
          // Awaits the cursor secret, which every replica shares through the database.
          useFactory: async () => {
            const [row] = await dataSource.query(`SELECT value FROM lifecycle.settings WHERE name = 'cursor_secret'`);
            return new InternQueriesService(dataSource, new CursorCodec(row.value));
          },
        },
        {
          provide: LEAN_NATS_HANDLERS,
          useFactory: (queries: InternQueriesService) => [
            ...internsLeanHandlers(subjects.lifecycle, queries),
            ...doorLeanHandlers(subjects.lifecycle, door),
          ],
          inject: [InternQueriesService],
        },
      ],
    };
  }
}

/**
 * Runs caches its intern lookups: it hears of a committed change before the command that made it answers. The
 * change is committed whatever happens here: a notice lost with the connection leaves runs' entry to its TTL.
 */
function noticeInternChanged(nc: ServiceDeps['nc'], subjects: ServiceDeps['subjects'], internId: string): void {
  try {
    nc.publish(subjects.internChanged, internId);
  } catch {
    // The connection is closing; see above.
  }
}
