import { subjectsFor } from '@interns/contracts';
import { RpcClient } from '@interns/messaging';
import { describeServiceProcess } from '@interns/testing';

describeServiceProcess({
  service: 'analytics',
  portVariable: 'ANALYTICS_PORT',
  migratedTable: 'analytics.processed_events',
  ping: (nc, prefix) => new RpcClient(nc).request(subjectsFor(prefix).analytics.ping, {}, { timeoutMs: 2000 }),
});
