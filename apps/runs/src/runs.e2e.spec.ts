import { subjectsFor } from '@interns/contracts';
import { RpcClient } from '@interns/messaging';
import { describeServiceProcess } from '@interns/testing';

describeServiceProcess({
  service: 'runs',
  portVariable: 'RUNS_PORT',
  migratedTable: 'runs.sessions',
  ping: (nc, prefix) => new RpcClient(nc).request(subjectsFor(prefix).runs.ping, {}, { timeoutMs: 2000 }),
});
