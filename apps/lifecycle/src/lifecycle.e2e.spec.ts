import { subjectsFor } from '@interns/contracts';
import { describeServiceProcess } from '@interns/testing';

describeServiceProcess({
  service: 'lifecycle',
  portVariable: 'LIFECYCLE_PORT',
  migratedTable: 'lifecycle.interns',
  pingSubject: (prefix) => subjectsFor(prefix).lifecycle.ping,
});
