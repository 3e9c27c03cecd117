/**
 * The command runner in-process, against a real HTTP server standing in for the API's answers: exit codes and
 * error output (plain and `--json`), and the device-flow hook of `login` (called with the issuer, its token
 * checked with one API call and stored).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { runCli } from './cli';
import type { DeviceFlowRequest } from './commands/login.command';
import { ApiError, EXIT } from './errors';
import type { CliIo } from './output/output';

let home: string;
let server: Server;
let api: string;
const seenAuth: (string | undefined)[] = [];

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), 'interns-cli-unit-'));
  seenAuth.length = 0;
  server = createServer((request, response) => {
    seenAuth.push(request.headers.authorization);
    if (request.headers.authorization !== 'Bearer a.b.c' && request.headers.authorization !== 'Bearer uk_good') {
      response.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 401, message: 'invalid or missing API key' } }));
      return;
    }
    if (request.url?.startsWith('/api/v1/interns?')) {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: [], has_more: false }));
      return;
    }
    response.writeHead(409, { 'content-type': 'application/json' }).end(
      JSON.stringify({ error: { code: 409, message: 'the intern is not running', metadata: { reason: 'intern_not_running', retryable: false } } }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  api = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
});

afterEach(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(home, { recursive: true, force: true });
});

function io(): CliIo & { out: () => string; err: () => string } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk) => (out += chunk));
  stderr.on('data', (chunk) => (err += chunk));
  const stdin = new PassThrough();
  stdin.end();
  return { stdin: stdin as never, stdout: stdout as never, stderr: stderr as never, out: () => out, err: () => err };
}

const env = () => ({ HOME: home });

it('maps failures to exit codes, with the message, or the envelope under --json', async () => {
  const unknown = io();
  expect(await runCli(['frobnicate', '--json'], env(), unknown)).toBe(EXIT.usage);
  expect(JSON.parse(unknown.err())).toMatchObject({ error: { code: null, metadata: { reason: 'usage', retryable: false } } });

  const loggedOut = io();
  expect(await runCli(['ls', '--api', api], env(), loggedOut)).toBe(EXIT.auth);
  expect(loggedOut.err()).toBe(`error: not logged in to ${api}: run \`interns login --api ${api}\`\n`);

  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const closedPort = (closed.address() as AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const unreachable = io();
  expect(await runCli(['login', '--api', `http://127.0.0.1:${closedPort}/api/v1`, '--key', 'uk_good'], env(), unreachable)).toBe(EXIT.unreachable);
  expect(unreachable.err()).toBe(`error: cannot reach the API at http://127.0.0.1:${closedPort}: ECONNREFUSED\n`);

  expect(await runCli(['login', '--api', api, '--key', 'uk_good'], env(), io())).toBe(EXIT.ok);
  const refused = io();
  expect(await runCli(['provision', '00000000-0000-4000-8000-000000000001'], env(), refused)).toBe(EXIT.failure);
  expect(refused.err()).toBe('error: the intern is not running (409 intern_not_running)\nhint: provision it first: `interns provision <intern> --wait`\n');
  const refusedJson = io();
  expect(await runCli(['provision', '00000000-0000-4000-8000-000000000001', '--json'], env(), refusedJson)).toBe(EXIT.failure);
  expect(JSON.parse(refusedJson.err())).toEqual({ error: { code: 409, message: 'the intern is not running', metadata: { reason: 'intern_not_running', retryable: false } } });
});

it('runs the device flow hook for --issuer, checks the token it gives and stores it', async () => {
  const asked: DeviceFlowRequest[] = [];
  const deviceFlow = async (request: DeviceFlowRequest) => {
    asked.push(request);
    return { kind: 'oauth_token' as const, access_token: 'a.b.c', issuer: request.issuer, refresh_token: 'r', saved_at: 'now' };
  };
  const run = io();
  expect(await runCli(['login', '--api', api, '--issuer', 'https://issuer.example', '--client-id', 'cli', '--json'], env(), run, { deviceFlow })).toBe(EXIT.ok);
  expect(asked.map(({ issuer, apiUrl, clientId }) => ({ issuer, apiUrl, clientId }))).toEqual([{ issuer: 'https://issuer.example', apiUrl: api, clientId: 'cli' }]);
  expect(seenAuth).toEqual(['Bearer a.b.c']);
  const stored = JSON.parse(await readFile(join(home, '.config/interns/credentials.json'), 'utf8'));
  expect(stored.apis[api]).toEqual({ kind: 'oauth_token', access_token: 'a.b.c', issuer: 'https://issuer.example', refresh_token: 'r', saved_at: 'now' });

  const withoutFlow = io();
  expect(await runCli(['login', '--api', api, '--issuer', 'https://issuer.example'], env(), withoutFlow, {})).toBe(EXIT.usage);
  expect(withoutFlow.err()).toContain('no OAuth device flow');
});

it('gives an API refusal the exit code of its kind', () => {
  const envelope = (code: number, reason: string) => ({ error: { code, message: 'm', metadata: { reason: reason as never, retryable: false } } });
  expect(new ApiError(401, { error: { code: 401, message: 'm' } }, 'm').exitCode).toBe(EXIT.auth);
  expect(new ApiError(403, envelope(403, 'personal_identity_required'), 'm').exitCode).toBe(EXIT.auth);
  expect(new ApiError(404, envelope(404, 'not_found'), 'm').exitCode).toBe(EXIT.notFound);
  expect(new ApiError(409, envelope(409, 'name_taken'), 'm').exitCode).toBe(EXIT.failure);
  expect(new ApiError(502, null, 'HTTP 502').toEnvelope()).toEqual({ error: { code: 502, message: 'HTTP 502' } });
});
