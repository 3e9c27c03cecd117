// chat/: chat and invoke requests over NATS (steer the intern's live run or start one); the run itself is in runs/.
import { Controller, Inject, Type } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { ChatReply, ChatRequest, InvokeReply, InvokeRequest, Subjects } from '@interns/contracts';
import { TurnsService } from './turns.service';

/** Chat and invoke requests from the gateway, served by any replica (queue group `runs`). */
export function chatNatsController(subjects: Subjects['runs']): Type<unknown> {
  @Controller()
  class ChatNatsController {
    constructor(@Inject(TurnsService) private readonly turns: TurnsService) {}

    @MessagePattern(subjects.chat)
    chat(@Payload() request: ChatRequest): Promise<ChatReply> {
      return this.turns.chat(request);
    }

    @MessagePattern(subjects.invoke)
    invoke(@Payload() request: InvokeRequest): Promise<InvokeReply> {
      return this.turns.invoke(request);
    }
  }
  return ChatNatsController;
}
