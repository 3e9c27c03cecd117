import { Controller, Inject, Type } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { Subjects, TerminalOpenReply, TerminalOpenRequest } from '@interns/contracts';
import { TerminalHost } from './terminal-host';

/**
 * The door's way to a terminal (interface section 20): any runs replica opens it and then holds it, its bytes going to
 * the terminal's own subjects. Built in a factory because the subject carries NATS_PREFIX.
 */
export function terminalsNatsController(subjects: Subjects['runs']): Type<unknown> {
  @Controller()
  class TerminalsNatsController {
    constructor(@Inject(TerminalHost) private readonly terminals: TerminalHost) {}

    @MessagePattern(subjects.terminalOpen)
    open(@Payload() request: TerminalOpenRequest): Promise<TerminalOpenReply> {
      return this.terminals.open(request);
    }
  }
  return TerminalsNatsController;
}
