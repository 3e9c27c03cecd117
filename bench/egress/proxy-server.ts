import { pathToFileURL } from 'node:url';
import { AddressPolicy, EgressCa, type EgressContext, type EgressPolicy, EgressProxy, resolverWith } from '@interns/egress-proxy';
import { requiredEnv, runAsProcess } from '../shared/bench-kit';
import { startControlServer } from './control-server';

/**
 * The egress proxy under test, its own process (so its CPU is read alone): `EgressProxy` from libs/egress-proxy
 * serving one listener on 127.0.0.1 (`listenTcp`, as the specs do), with EGRESS_ALLOW_PRIVATE's address policy
 * (the origin is on loopback), the bench's names pinned to 127.0.0.1 (EGRESS_RESOLVE's resolver), and one fixed
 * policy: TUNNEL_HOST allowed (tunnelled untouched), one secret bound to SECRET_HOST (TLS terminated, its
 * placeholder replaced in headers). Log entries are only counted.
 *
 * The upstream leg trusts the origin's CA as it trusts a public CA in production: through Node's default root
 * store (the bench starts this process with NODE_EXTRA_CA_CERTS), not `upstreamCa`. With `upstreamCa` set, the
 * proxy hands tls.connect every root plus that CA as `ca` for each upstream connection, and Node parses them all
 * again each time (about 17 ms of CPU per connection here): a cost of that test-only option, not of the proxy.
 */

export interface ProxyServerOptions {
  egressCaPem: string;
  originPort: number;
  proxyPort: number;
  controlPort: number;
  tunnelHost: string;
  secretHost: string;
  placeholder: string;
  secretValue: string;
}

export async function startProxyServer(options: ProxyServerOptions) {
  const counters = { allowed: 0, denied: 0, failed: 0, secretsOpened: 0 };
  const proxy = new EgressProxy({
    ca: await EgressCa.fromPem(options.egressCaPem),
    ports: [options.originPort],
    addressPolicy: new AddressPolicy({ allowPrivate: true, platformEndpoints: [] }),
    resolver: resolverWith(
      new Map([
        [options.tunnelHost, ['127.0.0.1']],
        [options.secretHost, ['127.0.0.1']],
      ]),
      async (name) => {
        throw Object.assign(new Error(`${name} is not pinned in the egress bench`), { code: 'ENOTFOUND' });
      },
    ),
    bytesPerRun: Number.MAX_SAFE_INTEGER,
    connectionsPerIntern: 64,
    onLog: (entry) => {
      if (entry.decision === 'denied') counters.denied += 1;
      else if (entry.reason !== null) counters.failed += 1;
      else counters.allowed += 1;
    },
  });
  const policy: EgressPolicy = {
    allow: [options.tunnelHost],
    secrets: [{ name: 'bench_token', hosts: [options.secretHost], placeholder: options.placeholder }],
  };
  const context: EgressContext = {
    internId: 'bench-intern',
    runId: 'bench-run',
    policy: async () => policy,
    openSecret: async (name) => {
      if (name !== 'bench_token') throw new Error(`no secret ${name}`);
      counters.secretsOpened += 1;
      return options.secretValue;
    },
  };
  await proxy.listenTcp(options.proxyPort, context);
  const control = await startControlServer(options.controlPort, () => ({ ...counters }));
  return {
    async close() {
      await control.close();
      await proxy.closeAll();
    },
  };
}

// Run as its own process: its CPU per request is what the bench reports as the proxy's.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runAsProcess('egress bench proxy', () =>
    startProxyServer({
      egressCaPem: requiredEnv('EGRESS_CA_PEM'),
      originPort: Number(requiredEnv('ORIGIN_PORT')),
      proxyPort: Number(requiredEnv('PROXY_PORT')),
      controlPort: Number(requiredEnv('CONTROL_PORT')),
      tunnelHost: requiredEnv('TUNNEL_HOST'),
      secretHost: requiredEnv('SECRET_HOST'),
      placeholder: requiredEnv('SECRET_PLACEHOLDER'),
      secretValue: requiredEnv('SECRET_VALUE'),
    }),
  );
}
