// Container health probe: GET <path> (default /health/live) on this service's port, exit 0 on 200.
// The port comes from the same config loader as the service, so env names and defaults cannot drift.
import { loadConfig } from './dist/libs/contracts/src/config.js';

// The migrations image serves nothing: while its one-shot step runs, it is alive.
if (process.env.APP === 'migrations') process.exit(0);

const config = loadConfig(process.env);
const ports = {
  gateway: config.gatewayPort,
  lifecycle: config.lifecyclePort,
  runs: config.runsPort,
  analytics: config.analyticsPort,
  webhooks: config.webhooksPort,
  egress: config.egressPort,
};
const port = ports[process.env.APP];
if (port === undefined) {
  console.error(`unknown APP "${process.env.APP}"`);
  process.exit(1);
}
const path = process.argv[2] ?? '/health/live';
try {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(2500) });
  process.exit(response.status === 200 ? 0 : 1);
} catch (error) {
  console.error(String(error));
  process.exit(1);
}
