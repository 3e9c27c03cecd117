import { Writable } from 'node:stream';
import { JsonLogger } from './json-logger';
import { runInRequestContext } from './request-context';

/** A destination that keeps every written line, parsed. */
function lineSink(): { stream: Writable; lines: () => Record<string, unknown>[] } {
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
  return { stream, lines };
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
