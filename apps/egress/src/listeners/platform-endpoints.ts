import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { PlatformConfig } from '@interns/contracts';
import type { PlatformEndpoint } from '@interns/egress-proxy';

/** Every address a host of the platform's own URLs resolves to (a literal resolves to itself). */
async function addressesOf(host: string): Promise<string[]> {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (isIP(bare) !== 0) return [bare];
  const answers = await lookup(bare, { all: true, verbatim: true });
  return answers.map((answer) => answer.address);
}

/** host:port of a URL, with the scheme's default port. */
function hostPortOf(url: string, defaultPort: number): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: parsed.port === '' ? defaultPort : Number(parsed.port) };
}

/**
 * The platform's own listening endpoints, refused to every request even with EGRESS_ALLOW_PRIVATE (interface
 * section 19): PostgreSQL (both URLs), every NATS server, and every service's port on every address of this machine.
 */
export async function platformEndpoints(config: PlatformConfig): Promise<PlatformEndpoint[]> {
  const remote = [
    hostPortOf(config.databaseUrl, 5432),
    hostPortOf(config.migrationsDatabaseUrl, 5432),
    ...config.natsUrl.split(',').map((url) => hostPortOf(url.trim().replace(/^(nats|tls):/, 'http:'), 4222)),
  ];
  const endpoints: PlatformEndpoint[] = [];
  for (const { host, port } of remote) {
    for (const address of await addressesOf(host)) endpoints.push({ address, port });
  }
  const servicePorts = [config.gatewayPort, config.lifecyclePort, config.runsPort, config.analyticsPort, config.webhooksPort, config.egressPort];
  for (const port of servicePorts) endpoints.push({ address: '0.0.0.0', port }, { address: '::', port });
  return endpoints;
}
