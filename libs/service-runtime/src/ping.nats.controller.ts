import { Controller, Type } from '@nestjs/common';
import { MessagePattern } from '@nestjs/microservices';
import type { ServiceName } from '@interns/contracts';

export interface PingReply {
  service: ServiceName;
  ok: true;
}

/**
 * Subjects carry NATS_PREFIX, known only once the config is loaded, while `@MessagePattern` takes its
 * pattern when the class is defined. So the class is defined inside a factory that receives the subject:
 * plain Nest decorators, no metadata patching, and the module decides the subject at run time.
 */
export function pingNatsController(service: ServiceName, subject: string): Type<unknown> {
  @Controller()
  class PingNatsController {
    @MessagePattern(subject)
    ping(): PingReply {
      return { service, ok: true };
    }
  }
  return PingNatsController;
}
