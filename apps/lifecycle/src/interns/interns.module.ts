import { DynamicModule, Module } from '@nestjs/common';
import { PostgresEventStore } from '@interns/event-store';
import type { ServiceDeps } from '@interns/health';
import { IntegrationEventsRelay } from '../integration-events/integration-events.relay';
import { LIFECYCLE_SCHEMA } from '../migrations';
import { CursorCodec } from './cursor';
import { InternCommandsService } from './intern-commands.service';
import { InternQueriesService } from './intern-queries.service';
import { projectInternSummary } from './intern-summary.projection';
import { InternsNatsController } from './interns.nats.controller';

@Module({})
export class InternsModule {
  static forRoot({ dataSource }: ServiceDeps): DynamicModule {
    return {
      module: InternsModule,
      controllers: [InternsNatsController],
      providers: [
        IntegrationEventsRelay,
        {
          provide: PostgresEventStore,
          useFactory: () =>
            new PostgresEventStore(dataSource, { schema: LIFECYCLE_SCHEMA, projections: [projectInternSummary] }),
        },
        {
          provide: InternCommandsService,
          useFactory: (store: PostgresEventStore) => new InternCommandsService(dataSource, store),
          inject: [PostgresEventStore],
        },
        {
          provide: InternQueriesService,
          // The cursor secret is shared by every replica through the database.
          useFactory: async () => {
            const [row] = await dataSource.query(`SELECT value FROM lifecycle.settings WHERE name = 'cursor_secret'`);
            return new InternQueriesService(dataSource, new CursorCodec(row.value));
          },
        },
      ],
    };
  }
}
