import { subjectsFor } from '@interns/contracts';
import { describeServiceProcess } from '@interns/testing';

describeServiceProcess({
  service: 'analytics',
  portVariable: 'ANALYTICS_PORT',
  migratedTable: 'analytics.processed_events',
  pingSubject: (prefix) => subjectsFor(prefix).analytics.ping,
});
