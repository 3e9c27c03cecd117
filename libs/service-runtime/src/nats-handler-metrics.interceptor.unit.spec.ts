import 'reflect-metadata';
import { MessagePattern } from '@nestjs/microservices';
import { DomainError } from '@interns/contracts';
import { handledOutcomeOf, handlerSubjectLabel } from './nats-handler-metrics.interceptor';

class ExampleHandlers {
  @MessagePattern('test_x.node-1.lifecycle.cmd.create-intern')
  create(): string {
    return 'created';
  }

  plain(): string {
    return 'not a handler';
  }
}

describe('NATS handler metric labels', () => {
  it('labels a handler by its pattern without NATS_PREFIX', () => {
    expect(handlerSubjectLabel(ExampleHandlers.prototype.create)).toBe('lifecycle.cmd.create-intern');
    // Worked out once, then remembered.
    expect(handlerSubjectLabel(ExampleHandlers.prototype.create)).toBe('lifecycle.cmd.create-intern');
  });

  it('labels a handler without a string pattern "unknown"', () => {
    expect(handlerSubjectLabel(ExampleHandlers.prototype.plain)).toBe('unknown');
  });

  it('tells refusals (contract reasons) from failures', () => {
    expect(handledOutcomeOf(new DomainError('not_found', 'no such intern'))).toBe('refused');
    expect(handledOutcomeOf(new DomainError('internal_error', 'a fault reported as such'))).toBe('failed');
    expect(handledOutcomeOf(new Error('boom'))).toBe('failed');
    expect(handledOutcomeOf('string thrown')).toBe('failed');
  });
});
