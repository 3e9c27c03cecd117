// retention/: transcript retention (CONTRACT section 22): the purge of an intern's transcripts before its teardown
// completes, and the sweep of transcripts past TRANSCRIPT_RETENTION_MS.
import { Controller, Inject, Logger, Type } from '@nestjs/common';
import { MessagePattern, Payload } from '@nestjs/microservices';
import type { RuntimeRequest, RuntimeStepReply, Subjects } from '@interns/contracts';
import { TranscriptPurger } from './transcript-purger';

/**
 * Lifecycle's teardown asks here, in its last step, for the intern's transcripts and run chunks to go (CONTRACT
 * section 22), so the teardown completes only once they are gone. A failure propagates: lifecycle sees an
 * error reply as transient and asks again, and a purge repeated is harmless. Built in a factory because the
 * subject carries NATS_PREFIX.
 */
export function retentionNatsController(subjects: Subjects['runs']): Type<unknown> {
  @Controller()
  class RetentionNatsController {
    private readonly logger = new Logger('TranscriptRetention');

    constructor(@Inject(TranscriptPurger) private readonly purger: TranscriptPurger) {}

    @MessagePattern(subjects.purgeTranscripts)
    async purgeTranscripts(@Payload() request: RuntimeRequest): Promise<RuntimeStepReply> {
      const purged = await this.purger.purgeIntern(request.internId);
      if (purged > 0) this.logger.log(`purged the transcripts of ${purged} run(s) of deleted intern ${request.internId}`);
      return { ok: true };
    }
  }
  return RetentionNatsController;
}
