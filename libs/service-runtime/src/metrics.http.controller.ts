import { Controller, Get, Header } from '@nestjs/common';
import { METRICS_CONTENT_TYPE, metricsRegistry } from './metrics';

@Controller('metrics')
export class MetricsHttpController {
  @Get()
  @Header('Content-Type', METRICS_CONTENT_TYPE)
  @Header('Cache-Control', 'no-store')
  metrics(): Promise<string> {
    return metricsRegistry.metrics();
  }
}
