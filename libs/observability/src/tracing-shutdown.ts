import { Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { stopTracing } from './tracing';

/** Sends the spans still buffered when the app shuts down (provide it in a global module: its hook runs last). */
@Injectable()
export class TracingShutdown implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    await stopTracing();
  }
}
