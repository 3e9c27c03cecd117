import { subjectsFor } from '@interns/contracts';
import { describeServiceProcess } from '@interns/testing';

describeServiceProcess({
  service: 'runs',
  portVariable: 'RUNS_PORT',
  migratedTable: 'runs.sessions',
  pingSubject: (prefix) => subjectsFor(prefix).runs.ping,
});
