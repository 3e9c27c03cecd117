import { subjectsFor } from '@interns/contracts';
import { RpcClient } from '@interns/messaging';
import { describeServiceProcess } from '@interns/testing';

describeServiceProcess({
  service: 'webhooks',
  portVariable: 'WEBHOOKS_PORT',
  migratedTable: 'webhooks.deliveries',
  ping: (nc, prefix) => new RpcClient(nc).request(subjectsFor(prefix).webhooks.ping, {}, { timeoutMs: 2000 }),
});
