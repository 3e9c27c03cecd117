import { hostname } from 'node:os';
import { Writable } from 'node:stream';
import pino from 'pino';
import { JsonLogger } from './json-logger';
import { LOG_REDACT_PATHS, REDACTED, redactUrlCredentials } from './log-redaction';
import { runInRequestContext } from './request-context';

/** A destination that keeps every written line, parsed (and as written, in `text`). */
function lineSink(): { stream: Writable; lines: () => Record<string, unknown>[]; text: () => string } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  const lines = () =>
    chunks
      .join('')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { stream, lines, text: () => chunks.join('') };
}

describe('JsonLogger', () => {
  it('writes one JSON object per line with time, level, service, context and msg', () => {
    const sink = lineSink();
    const logger = new JsonLogger({ service: 'lifecycle', destination: sink.stream });
    logger.log('listening', 'Bootstrap');
    const [line] = sink.lines();
    expect(line).toMatchObject({ level: 'info', service: 'lifecycle', context: 'Bootstrap', msg: 'listening' });
    expect(new Date(String(line.time)).toISOString()).toBe(line.time);
    expect(line).not.toHaveProperty('correlation_id');
  });

  it('adds the correlation id of the request being handled, also after an await', async () => {
    const sink = lineSink();
    const logger = new JsonLogger({ service: 'runs', destination: sink.stream });
    await runInRequestContext({ correlationId: 'corr-1' }, async () => {
      logger.warn('slow', 'Runs');
      await new Promise((done) => setImmediate(done));
      logger.log('done', 'Runs');
    });
    logger.log('outside', 'Runs');
    expect(sink.lines().map((line) => [line.msg, line.correlation_id])).toEqual([
      ['slow', 'corr-1'],
      ['done', 'corr-1'],
      ['outside', undefined],
    ]);
  });

  it('writes an error with its stack under err', () => {
    const sink = lineSink();
    const logger = new JsonLogger({ service: 'gateway', destination: sink.stream });
    logger.error('request failed', new Error('boom'), 'Http');
    const [line] = sink.lines();
    expect(line).toMatchObject({ level: 'error', context: 'Http', msg: 'request failed', err: { type: 'Error', message: 'boom' } });
    expect((line.err as { stack: string }).stack).toContain('json-logger.unit.spec');
  });

  it("writes Nest's start-up chatter at debug, below info, and keeps its warnings", () => {
    const sink = lineSink();
    const logger = new JsonLogger({ service: 'gateway', level: 'info', destination: sink.stream });
    logger.log('Mapped {/api/v1/interns, POST} route', 'RouterExplorer');
    logger.log('HealthModule dependencies initialized', 'InstanceLoader');
    logger.log('Starting Nest application...', 'NestFactory');
    logger.warn('something odd', 'NestApplication');
    logger.log('POST /api/v1/interns 201 3.1ms', 'Http');
    expect(sink.lines().map((line) => [line.level, line.context])).toEqual([
      ['warn', 'NestApplication'],
      ['info', 'Http'],
    ]);

    const verbose = lineSink();
    const debugLogger = new JsonLogger({ service: 'gateway', level: 'debug', destination: verbose.stream });
    debugLogger.log('Starting Nest application...', 'NestFactory');
    expect(verbose.lines()).toEqual([expect.objectContaining({ level: 'debug', context: 'NestFactory', msg: 'Starting Nest application...' })]);
  });

  it('drops what is below its level, and follows Nest level lists', () => {
    const sink = lineSink();
    const logger = new JsonLogger({ service: 'analytics', level: 'info', destination: sink.stream });
    logger.debug('hidden', 'X');
    logger.verbose('hidden too', 'X');
    logger.setLogLevels(['fatal', 'error', 'warn', 'log', 'debug']);
    logger.debug('shown', 'X');
    logger.verbose('still hidden', 'X');
    expect(sink.lines().map((line) => [line.level, line.msg])).toEqual([['debug', 'shown']]);
    expect(logger.level).toBe('debug');
  });
});

describe('JsonLogger redaction', () => {
  const SECRET = 'sk-very-secret-value';

  it('writes [Redacted] for authorization headers, tokens, keys and secrets, at the top and nested', () => {
    const sink = lineSink();
    const logger = new JsonLogger({ service: 'gateway', destination: sink.stream });
    logger.warn(
      'request refused',
      {
        req: { method: 'POST', url: '/api/v1/interns', headers: { authorization: `Bearer ${SECRET}`, 'x-api-key': SECRET, accept: 'json' } },
        token: SECRET,
        principal: { memberId: 'alice', api_key: SECRET, daemonToken: SECRET },
        nats: { creds: { seed: SECRET, password: SECRET, nkey: SECRET } },
        oauth: { client_secret: SECRET, refresh_token: SECRET, nested: { deeper: { secret: SECRET } } },
        signing: { privateKey: SECRET, 'x-intern-invoke-signature': SECRET },
        cookie: SECRET,
      },
      'Admission',
    );
    const [line] = sink.lines();
    const text = JSON.stringify(line);
    expect(text).not.toContain(SECRET);
    expect(line).toMatchObject({
      msg: 'request refused',
      context: 'Admission',
      req: { method: 'POST', url: '/api/v1/interns', headers: { authorization: '[Redacted]', 'x-api-key': '[Redacted]', accept: 'json' } },
      token: '[Redacted]',
      principal: { memberId: 'alice', api_key: '[Redacted]', daemonToken: '[Redacted]' },
      nats: { creds: '[Redacted]' },
      oauth: { client_secret: '[Redacted]', refresh_token: '[Redacted]', nested: { deeper: { secret: '[Redacted]' } } },
      signing: { privateKey: '[Redacted]', 'x-intern-invoke-signature': '[Redacted]' },
      cookie: '[Redacted]',
    });
  });

  it('writes every line the same bytes as pino redacting all of them would', () => {
    // Flat lines skip pino's redaction (JsonLogger's fast path); the bytes must not tell.
    const sink = lineSink();
    const logger = new JsonLogger({ service: 'gateway', destination: sink.stream });
    const reference = lineSink();
    const redactingAll = pino(
      {
        base: { service: 'gateway', pid: process.pid, hostname: hostname() },
        timestamp: false,
        formatters: { level: (label) => ({ level: label }) },
        redact: { paths: LOG_REDACT_PATHS, censor: REDACTED },
      },
      reference.stream,
    );
    const lines: [string, Record<string, unknown>][] = [
      ['GET /api/v1/interns 200 1.2ms', { method: 'GET', route: '/api/v1/interns', status: 200, duration_ms: 1.2, correlation_id: 'c-1' }],
      ['no state', { status: 401, duration_ms: null, correlation_id: undefined, flag: true, huge: Infinity }],
      ['escapes "quoted" \\ \u0001', { text: 'tab\there "q" \\ é 😀', long: `${'x'.repeat(60)}"` }],
      ['a lone surrogate \ud800', { status: 200 }],
      ['a lone surrogate in a field', { text: 'another \udc00' }],
      ['credential at the top', { token: SECRET, status: 200 }],
      ['nested', { req: { headers: { authorization: SECRET } }, list: [{ secret: SECRET }] }],
    ];
    for (const [msg, fields] of lines) {
      logger.log(msg, fields, 'Http');
      redactingAll.info({ ...fields, context: 'Http' }, msg);
    }
    const withoutTime = (text: string) => text.replace(/,"time":"[^"]*"/g, '');
    expect(withoutTime(sink.text())).toBe(reference.text());
    expect(sink.text()).not.toContain(SECRET);
  });

  it('leaves the logged objects themselves untouched', () => {
    const sink = lineSink();
    const logger = new JsonLogger({ service: 'gateway', destination: sink.stream });
    const headers = { authorization: `Bearer ${SECRET}` };
    logger.log('x', { headers });
    expect(headers.authorization).toBe(`Bearer ${SECRET}`);
  });
});

describe('redactUrlCredentials', () => {
  it('hides the values of credential query parameters and keeps the rest', () => {
    expect(redactUrlCredentials('/api/v1/interns')).toBe('/api/v1/interns');
    expect(redactUrlCredentials('/x?access_token=abc&limit=5&api_key=k&api-key=k2&Authorization=b&page=2')).toBe(
      '/x?access_token=[Redacted]&limit=5&api_key=[Redacted]&api-key=[Redacted]&Authorization=[Redacted]&page=2',
    );
    expect(redactUrlCredentials('/cb?code=c&state=s&client%5Fsecret=z&flag')).toBe('/cb?code=[Redacted]&state=s&client%5Fsecret=[Redacted]&flag');
  });
});
