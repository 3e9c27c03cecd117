// run-resources/: runs as resources (CONTRACT section 12): list, get, cancel, answer a question, follow grants.
import { Controller, Inject, Type } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type {
  AnswerRunRequest,
  ListQuestionsRequest,
  ListRunsRequest,
  QuestionInbox,
  RunPage,
  RunRequest,
  RunResource,
  RunStreamGrant,
  Subjects,
} from '@interns/contracts';
import { RunResourcesService } from './run-resources.service';

/** The run routes and the question inbox from the gateway, served by any replica (queue group `runs`). */
export function runResourcesNatsController(subjects: Subjects['runs']): Type<unknown> {
  @Controller()
  class RunResourcesNatsController {
    constructor(@Inject(RunResourcesService) private readonly runs: RunResourcesService) {}

    @MessagePattern(subjects.listRuns)
    list(@Payload() request: ListRunsRequest): Promise<RunPage> {
      return this.runs.list(request);
    }

    @MessagePattern(subjects.getRun)
    get(@Payload() request: RunRequest): Promise<RunResource> {
      return this.runs.get(request);
    }

    @MessagePattern(subjects.followRun)
    follow(@Payload() request: RunRequest): Promise<RunStreamGrant> {
      return this.runs.follow(request);
    }

    @MessagePattern(subjects.listQuestions)
    questions(@Payload() request: ListQuestionsRequest): Promise<QuestionInbox> {
      return this.runs.questions(request);
    }

    @MessagePattern(subjects.cancelRun)
    cancel(@Payload() request: RunRequest): Promise<{ cancelling: true }> {
      return this.runs.cancel(request);
    }

    @MessagePattern(subjects.answerRun)
    answer(@Payload() request: AnswerRunRequest): Promise<{ answered: true }> {
      return this.runs.answer(request);
    }
  }
  return RunResourcesNatsController;
}
