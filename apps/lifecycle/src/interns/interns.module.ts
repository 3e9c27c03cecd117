import { DynamicModule, Logger, Module } from '@nestjs/common';
import { IntegrationEventsRelay, LeaderLease, PostgresEventStore } from '@interns/event-store';
import type { ServiceDeps } from '@interns/health';
import { ChatappInstallsService } from '../chatapp/chatapp-installs.service';
import { projectDaemonTokenRevocation } from '../daemon/daemon-token-revocation.projection';
import { DaemonModule } from '../daemon/daemon.module';
import { LIFECYCLE_SCHEMA } from '../migrations';
import { ProvisioningProcessManager } from '../provisioning/provisioning.process-manager';
import { RuntimeDriverClient } from '../provisioning/runtime-driver.client';
import { WorkSignal } from '../provisioning/work-signal';
import { CursorCodec } from './cursor';
import { InternCommandsService } from './intern-commands.service';
import { InternQueriesService } from './intern-queries.service';
import { InternStreams } from './intern-streams';
import { projectInternSummary } from './intern-summary.projection';
import { InternTransitionsService } from './intern-transitions.service';
import { InternsNatsController } from './interns.nats.controller';

/** Advisory lock of the process manager's leader (distinct from the relay's). */
const PROCESS_MANAGER_LOCK: [string, string] = ['process-manager', `${LIFECYCLE_SCHEMA}/provisioning`];

@Module({})
export class InternsModule {
  static forRoot({ dataSource, nc, config, subjects }: ServiceDeps): DynamicModule {
    const signal = new WorkSignal();
    return {
      module: InternsModule,
      imports: [DaemonModule.forRoot({ dataSource, config })],
      controllers: [InternsNatsController],
      providers: [
        {
          provide: IntegrationEventsRelay,
          useFactory: () =>
            new IntegrationEventsRelay({
              service: 'lifecycle',
              schema: LIFECYCLE_SCHEMA,
              dataSource,
              nats: nc,
              subjects,
              logger: new Logger('IntegrationEventsRelay'),
            }),
        },
        {
          provide: PostgresEventStore,
          useFactory: () =>
            new PostgresEventStore(dataSource, {
              schema: LIFECYCLE_SCHEMA,
              projections: [projectInternSummary, projectDaemonTokenRevocation],
            }),
        },
        {
          provide: InternStreams,
          useFactory: (store: PostgresEventStore) => new InternStreams(store, () => signal.notify()),
          inject: [PostgresEventStore],
        },
        {
          provide: ChatappInstallsService,
          useFactory: (streams: InternStreams) => new ChatappInstallsService(dataSource, streams),
          inject: [InternStreams],
        },
        {
          provide: InternCommandsService,
          useFactory: (store: PostgresEventStore, installs: ChatappInstallsService) =>
            new InternCommandsService(dataSource, store, installs, () => signal.notify()),
          inject: [PostgresEventStore, ChatappInstallsService],
        },
        {
          provide: InternTransitionsService,
          useFactory: (streams: InternStreams, installs: ChatappInstallsService) =>
            new InternTransitionsService(dataSource, streams, installs),
          inject: [InternStreams, ChatappInstallsService],
        },
        {
          provide: InternQueriesService,
          // The cursor secret is shared by every replica through the database.
          useFactory: async () => {
            const [row] = await dataSource.query(`SELECT value FROM lifecycle.settings WHERE name = 'cursor_secret'`);
            return new InternQueriesService(dataSource, new CursorCodec(row.value));
          },
        },
        {
          provide: ProvisioningProcessManager,
          useFactory: (streams: InternStreams, installs: ChatappInstallsService) =>
            new ProvisioningProcessManager({
              dataSource,
              lease: new LeaderLease(dataSource, PROCESS_MANAGER_LOCK),
              streams,
              installs,
              driver: new RuntimeDriverClient(nc, subjects.runs),
              signal,
              concurrency: config.provisionConcurrency,
              stepDelayMs: config.provisionStepDelayMs,
              internDomain: config.internDomain,
              healthTimeoutMs: config.runtimeHealthTimeoutMs,
              logger: new Logger('ProvisioningProcessManager'),
            }),
          inject: [InternStreams, ChatappInstallsService],
        },
      ],
    };
  }
}
