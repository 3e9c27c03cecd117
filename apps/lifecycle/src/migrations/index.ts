import { eventStoreMigration } from '@interns/event-store';
import { InternsReadModel1700000000200 } from './1700000000200-interns-read-model';

export const LIFECYCLE_SCHEMA = 'lifecycle';
export const lifecycleMigrations = [eventStoreMigration(LIFECYCLE_SCHEMA), InternsReadModel1700000000200];
