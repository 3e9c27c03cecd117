import { PassThrough, Writable } from 'node:stream';
import { JsonLogger } from '@interns/observability';
import { chooseLogFormat, colorsFor, prettifyLines, prettyLogLine } from './log-format';

/** The JSON lines a service's logger writes. */
function serviceLines(service: string, write: (logger: JsonLogger) => void): string[] {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString());
      done();
    },
  });
  write(new JsonLogger({ service, destination }));
  return chunks.join('').split('\n').filter((line) => line !== '');
}

describe('npm start log format', () => {
  it('is pretty on a terminal and JSON lines anywhere else, unless LOG_FORMAT says which', () => {
    expect(chooseLogFormat({}, true)).toBe('pretty');
    expect(chooseLogFormat({}, false)).toBe('json');
    expect(chooseLogFormat({ LOG_FORMAT: '' }, false)).toBe('json');
    expect(chooseLogFormat({ LOG_FORMAT: 'pretty' }, false)).toBe('pretty');
    expect(chooseLogFormat({ LOG_FORMAT: 'JSON' }, true)).toBe('json');
    expect(() => chooseLogFormat({ LOG_FORMAT: 'fancy' }, true)).toThrow('LOG_FORMAT must be one of json, pretty, got "fancy"');
  });

  it('turns a service log line into a short readable one: time, level, service, context, message, other fields', () => {
    const [line] = serviceLines('gateway', (logger) => logger.log('listening on 8080', 'Bootstrap'));
    const pretty = prettyLogLine(false)(line);
    expect(pretty).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: gateway \[Bootstrap\] listening on 8080\n$/);

    const [withFields] = serviceLines('runs', (logger) => logger.warn({ msg: 'slow turn', run_id: 'r-1' }, 'Runs'));
    expect(prettyLogLine(false)(withFields)).toMatch(/WARN: runs \[Runs\] slow turn .*"run_id":"r-1"/);
  });

  it("shows an error's stack on the lines below, and names the service once when it is also the context", () => {
    const error = new Error('role "nobody" does not exist');
    const [line] = serviceLines('analytics', (logger) => logger.fatal('failed to start', error, 'analytics'));
    const pretty = prettyLogLine(false)(line);
    expect(pretty).toMatch(/^\[[\d:.]+\] FATAL: analytics failed to start/);
    expect(pretty).toContain('role \\"nobody\\" does not exist');
    expect(pretty.split('\n').length).toBeGreaterThan(3);
    expect(pretty).toContain('at ');
  });

  it('passes a line that is not JSON through as it is, and colors only on a terminal', () => {
    expect(prettyLogLine(false)('Error: something printed by hand')).toBe('Error: something printed by hand\n');
    expect(colorsFor(false)).toBe(false);
  });

  it('prettifies a stream line by line, a line split across chunks included, until it ends', async () => {
    const [first, second] = serviceLines('lifecycle', (logger) => {
      logger.log('migrated', 'Migrations');
      logger.error('lost NATS', undefined, 'Nats');
    });
    const input = new PassThrough();
    const output = new PassThrough();
    let text = '';
    output.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const done = prettifyLines(input, output, false);
    input.write(`${first}\n${second.slice(0, 10)}`);
    input.end(`${second.slice(10)}\n`);
    await done;
    expect(text.split('\n').filter((line) => line !== '')).toEqual([
      expect.stringMatching(/INFO: lifecycle \[Migrations\] migrated$/),
      expect.stringMatching(/ERROR: lifecycle \[Nats\] lost NATS$/),
    ]);
  });
});
