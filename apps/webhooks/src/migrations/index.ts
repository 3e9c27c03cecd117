import { CreateWebhooks1764000000000 } from './1764000000000-create-webhooks.migration';
import { QuestionTranscriptRetention1766000000000 } from './1766000000000-question-transcript-retention.migration';

/** In order of application; TypeORM records each by name in `webhooks.webhooks_migrations`. */
export const WEBHOOKS_MIGRATIONS = [CreateWebhooks1764000000000, QuestionTranscriptRetention1766000000000];
