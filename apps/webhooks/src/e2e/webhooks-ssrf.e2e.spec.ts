/**
 * End to end: webhook URLs the platform refuses to call (CONTRACT section 13) when WEBHOOK_ALLOW_INSECURE is
 * not set: plain http, and hosts that are or resolve to loopback, private, link-local or metadata addresses.
 * (A name that resolves to 10.0.0.1 is refused the same way; with no DNS under the test's control, that case is
 * run against the service with a test resolver: apps/webhooks/src/endpoints/webhook-endpoints.int.spec.ts.)
 */
import { Platform } from '@interns/testing';
import { API, IDENTITIES, KEYS, refusal } from '@interns/testing/e2e';

let platform: Platform;

beforeAll(async () => {
  platform = await Platform.start({ services: ['webhooks', 'gateway'] });
  await platform.applyIdentities(IDENTITIES);
}, 150_000);

afterAll(async () => {
  await platform?.stop();
});

function create(url: string) {
  return platform.api(`${API}/webhooks`, { token: KEYS.alice, json: { url, events: ['run.completed'] } });
}

it.each([
  ['http://127.0.0.1/hook', /https/],
  ['http://169.254.169.254/latest/meta-data', /https/],
  ['https://127.0.0.1/hook', /loopback/],
  ['https://localhost:8443/hook', /loopback/],
  ['https://[::1]/hook', /loopback/],
  ['https://169.254.169.254/latest/meta-data', /metadata/],
  ['https://[fd00:ec2::254]/latest/meta-data', /metadata/],
  ['https://10.0.0.1/hook', /private/],
  ['https://192.168.1.1/hook', /private/],
  ['https://100.64.0.1/hook', /carrierGradeNat/],
  ['https://0.0.0.0/hook', /unspecified/],
])('refuses %s with 400 invalid_body', async (url, why) => {
  const response = await create(url);
  expect(response.body).toEqual(refusal(400, 'invalid_body'));
  expect(response.body.error.message).toMatch(why);
});

it('keeps no endpoint of the refused URLs', async () => {
  expect((await platform.api(`${API}/webhooks`, { token: KEYS.alice })).body).toEqual({ data: [] });
});
