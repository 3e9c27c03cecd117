import { subjectsFor } from '@interns/contracts';
import { RpcClient } from '@interns/messaging';
import { describeServiceProcess } from '@interns/testing';

describeServiceProcess({
  service: 'lifecycle',
  portVariable: 'LIFECYCLE_PORT',
  migratedTable: 'lifecycle.interns',
  ping: (nc, prefix) => new RpcClient(nc).request(subjectsFor(prefix).lifecycle.ping, {}, { timeoutMs: 2000 }),
});
