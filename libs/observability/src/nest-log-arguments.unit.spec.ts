import { entryFromNestArguments } from './nest-log-arguments';

const STACK = 'Error: boom\n    at work (/app/dist/work.js:10:5)\n    at main (/app/dist/main.js:2:1)';

describe('entryFromNestArguments', () => {
  it("reads `new Logger(ctx).log(message)`: the context comes last", () => {
    expect(entryFromNestArguments('started', ['Interns'], false)).toEqual({
      msg: 'started',
      context: 'Interns',
      err: undefined,
      fields: undefined,
    });
  });

  it("reads `new Logger(ctx).error(message)`: Nest passes undefined for the missing stack", () => {
    expect(entryFromNestArguments('failed', [undefined, 'Rpc'], true)).toEqual({
      msg: 'failed',
      context: 'Rpc',
      err: undefined,
      fields: undefined,
    });
  });

  it('keeps a stack string given to error as err.stack', () => {
    expect(entryFromNestArguments('failed', [STACK, 'Rpc'], true)).toMatchObject({ msg: 'failed', context: 'Rpc', err: { stack: STACK } });
    // `Logger.error(message, stack)` without a context: a stack is never taken for the context.
    expect(entryFromNestArguments('failed', [STACK], true)).toMatchObject({ context: undefined, err: { stack: STACK } });
  });

  it('takes an Error (as message or parameter) as err', () => {
    const error = new Error('broken pipe');
    expect(entryFromNestArguments(error, ['Relay'], false)).toEqual({ msg: 'broken pipe', context: 'Relay', err: error, fields: undefined });
    expect(entryFromNestArguments('failed to start', [error, 'runs'], true)).toEqual({
      msg: 'failed to start',
      context: 'runs',
      err: error,
      fields: undefined,
    });
  });

  it('merges plain objects into the line and keeps other values under params', () => {
    expect(entryFromNestArguments({ span: { name: 'x' } }, ['Tracing'], false)).toEqual({
      msg: undefined,
      context: 'Tracing',
      err: undefined,
      fields: { span: { name: 'x' } },
    });
    expect(entryFromNestArguments('counted', [{ total: 3 }, 42, 'Stats'], false)).toEqual({
      msg: 'counted',
      context: 'Stats',
      err: undefined,
      fields: { total: 3, params: [42] },
    });
  });

  it('stringifies a non-string message', () => {
    expect(entryFromNestArguments(404, [], false).msg).toBe('404');
  });
});
