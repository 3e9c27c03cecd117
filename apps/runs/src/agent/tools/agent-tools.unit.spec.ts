import type { ModelToolCall } from '../model-provider';
import { AGENT_TOOL_SPECS, parseToolCall } from './agent-tools';
import { DEFAULT_ELICITATION_FIELDS } from './ask-user.tool';
import { shellRefusal } from './shell.tool';

const call = (name: string, args: unknown): ModelToolCall => ({
  id: 'call_1',
  name,
  arguments: typeof args === 'string' ? args : JSON.stringify(args),
});

const unusable = (name: string) => ({ tool: 'unusable', result: `unknown tool or arguments: ${name}` });

describe('agent tools', () => {
  it('offers shell and ask_user to the model', () => {
    expect(AGENT_TOOL_SPECS.map((spec) => spec.name)).toEqual(['shell', 'ask_user']);
  });

  describe('shell', () => {
    it('takes the command', () => {
      expect(parseToolCall(call('shell', { command: 'ls -la' }))).toEqual({ tool: 'shell', command: 'ls -la' });
    });

    it('ignores arguments besides the command', () => {
      expect(parseToolCall(call('shell', { command: 'ls', cwd: '/' }))).toEqual({ tool: 'shell', command: 'ls' });
    });

    it('finds a call without a string command unusable', () => {
      for (const args of [{}, { command: 7 }, { cmd: 'ls' }, [], 'null', '"ls"', '{"command":', '']) {
        expect(parseToolCall(call('shell', args))).toEqual(unusable('shell'));
      }
    });

    it('words a refusal for the model, saying when it stands for the session', () => {
      expect(shellRefusal('rm x', false)).toBe('Permission to run `rm x` was refused.');
      expect(shellRefusal('rm x', true)).toBe('Permission to run `rm x` was refused (standing refusal for this session).');
    });
  });

  describe('ask_user', () => {
    const fields = [
      { name: 'name', type: 'string', required: true },
      { name: 'age', type: 'integer', required: false },
    ];

    it('makes an elicitation of the message and fields', () => {
      expect(parseToolCall(call('ask_user', { message: 'who?', fields }))).toEqual({
        tool: 'ask_user',
        question: { kind: 'elicitation', message: 'who?', fields },
      });
    });

    it('asks for one required string answer when no fields are given', () => {
      for (const args of [{ message: 'why?' }, { message: 'why?', fields: null }, { message: 'why?', fields: 'answer' }]) {
        expect(parseToolCall(call('ask_user', args))).toEqual({
          tool: 'ask_user',
          question: { kind: 'elicitation', message: 'why?', fields: DEFAULT_ELICITATION_FIELDS },
        });
      }
    });

    it('keeps an empty field list', () => {
      expect(parseToolCall(call('ask_user', { message: 'ok?', fields: [] }))).toEqual({
        tool: 'ask_user',
        question: { kind: 'elicitation', message: 'ok?', fields: [] },
      });
    });

    it('keeps only the published properties of a field', () => {
      const described = [{ name: 'name', type: 'string', required: true, description: 'your name' }];
      expect(parseToolCall(call('ask_user', { message: 'who?', fields: described }))).toEqual({
        tool: 'ask_user',
        question: { kind: 'elicitation', message: 'who?', fields: [{ name: 'name', type: 'string', required: true }] },
      });
    });

    it('finds a call with a malformed field unusable', () => {
      const malformed = [
        [{ name: 'x', type: 'date', required: true }],
        [{ name: '', type: 'string', required: true }],
        [{ name: 'x', type: 'string' }],
        [{ name: 'x', type: 'string', required: 'yes' }],
        [{ type: 'string', required: true }],
        ['name'],
        [null],
        [...fields, { name: 7, type: 'string', required: true }],
      ];
      for (const bad of malformed) {
        expect(parseToolCall(call('ask_user', { message: 'who?', fields: bad }))).toEqual(unusable('ask_user'));
      }
    });

    it('finds a call without a string message unusable', () => {
      for (const args of [{}, { message: 1 }, { fields }, '[]', 'not json']) {
        expect(parseToolCall(call('ask_user', args))).toEqual(unusable('ask_user'));
      }
    });
  });

  it('finds a tool it does not offer unusable', () => {
    expect(parseToolCall(call('service.provide_input', { message: 'hi' }))).toEqual(unusable('service.provide_input'));
    expect(parseToolCall(call('browse', { url: 'x' }))).toEqual(unusable('browse'));
  });
});
