import { DynamicModule, Module } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { PostgresEventStore } from '@interns/event-store';
import { CursorCodec } from './cursor';
import { InternCommandsService } from './intern-commands.service';
import { InternQueriesService } from './intern-queries.service';
import { projectInternSummary } from './intern-summary.projection';
import { InternsNatsController } from './interns.nats.controller';
import { LIFECYCLE_SCHEMA } from '../migrations';

@Module({})
export class InternsModule {
  static async forRoot(dataSource: DataSource): Promise<DynamicModule> {
    const store = new PostgresEventStore(dataSource, { schema: LIFECYCLE_SCHEMA, projections: [projectInternSummary] });
    const [secret] = await dataSource.query(`SELECT value FROM lifecycle.settings WHERE name = 'cursor_secret'`);
    const cursors = new CursorCodec(secret.value);
    return {
      module: InternsModule,
      controllers: [InternsNatsController],
      providers: [
        { provide: InternCommandsService, useValue: new InternCommandsService(dataSource, store) },
        { provide: InternQueriesService, useValue: new InternQueriesService(dataSource, cursors) },
      ],
    };
  }
}
