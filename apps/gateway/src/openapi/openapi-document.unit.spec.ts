/**
 * The OpenAPI document against the gateway itself: it documents exactly the routes the gateway serves under
 * /api/v1 (read from Nest's route metadata with the app's global prefix applied, the table Nest registers with
 * Fastify), every
 * schema in it compiles under strict JSON Schema 2020-12, and what the chunk builders emit matches the
 * documented chunk schemas.
 */
import type { DynamicModule, Type } from '@nestjs/common';
import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { ChunkBuilder, errorEnvelope, loadConfig } from '@interns/contracts';
import { OPENAPI_DOCUMENT } from '@interns/contracts/openapi';
import { OpenApiResponseValidator } from '@interns/testing';
import { API_PREFIX, OPERATING_ROUTES } from '../http/api-prefix';
import { GatewayModule } from '../gateway.module';
import type { GatewayDependencies } from '../gateway.tokens';

/** `METHOD /path/{param}` of every handler of every controller in the module tree. */
function declaredRoutes(module: DynamicModule): string[] {
  const controllers: Type[] = [
    ...(module.controllers ?? []),
    ...(module.imports ?? []).flatMap((imported) => ((imported as DynamicModule).controllers ?? []) as Type[]),
  ];
  return controllers.flatMap((controller) => {
    const bases = asList(Reflect.getMetadata(PATH_METADATA, controller));
    return Object.getOwnPropertyNames(controller.prototype).flatMap((name) => {
      const handler = controller.prototype[name];
      const method = typeof handler === 'function' ? Reflect.getMetadata(METHOD_METADATA, handler) : undefined;
      if (method === undefined) return [];
      const paths = asList(Reflect.getMetadata(PATH_METADATA, handler));
      return bases.flatMap((base) => paths.map((path) => `${RequestMethod[method as RequestMethod]} ${servedPath(joinPath(base, path))}`));
    });
  });
}

function asList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [''];
  return Array.isArray(value) ? value : [value];
}

function joinPath(base: string, path: string): string {
  const joined = `/${[base, path].join('/')}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
  // Fastify's wildcard is the documented `{path}` (the files routes).
  return joined.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\/\*$/, '/{path}');
}

/** Where Nest serves a declared path: under the global prefix unless it is excluded (an operating route). */
function servedPath(path: string): string {
  return OPERATING_ROUTES.includes(path.slice(1)) ? path : `${API_PREFIX}${path}`;
}

// Only the module's shape is read: its services are built from the configuration, no connection is touched.
const routes = declaredRoutes(GatewayModule.forRoot({ config: loadConfig({}) } as GatewayDependencies));
const validator = new OpenApiResponseValidator(OPENAPI_DOCUMENT);

it('documents every route the gateway serves under /api/v1, and no other', () => {
  const served = routes.filter((route) => route.split(' ')[1]?.startsWith(`${API_PREFIX}/`));
  const documented = validator.operations().map((operation) => operation.replace(' ', ` ${API_PREFIX}`));
  expect(served.length).toBeGreaterThanOrEqual(23);
  expect([...documented].sort()).toEqual([...served].sort());
});

it('leaves out only the operating endpoints outside /api/v1 (health and metrics)', () => {
  const outside = routes.filter((route) => !route.split(' ')[1]?.startsWith(`${API_PREFIX}/`));
  expect(outside.sort()).toEqual(['GET /health/live', 'GET /health/ready', 'GET /metrics']);
});

describe('the schemas', () => {
  const intern = {
    id: '0b0e6a52-7d7c-4a8e-9d43-3d7c2f1e9a10',
    name: 'ada',
    description: null,
    instructions: null,
    model: null,
    status: 'provisioning',
    last_failure_message: null,
    progress: { step_label: 'Booting runtime', step_number: 3, total_steps: 4 },
    hostname: null,
    workspace_id: '11111111-1111-4111-8111-111111111111',
    vault_id: '5d9c2f62-1f0b-4b43-a8c5-0f0f0f0f0f0f',
    attached_vault_id: null,
    created_at: '2026-01-02T03:04:05.678Z',
    updated_at: '2026-01-02T03:04:05.678Z',
  };

  it('compile under strict JSON Schema 2020-12 (the validator compiled all of them)', () => {
    expect(validator.operations().length).toBeGreaterThanOrEqual(23);
  });

  it('take an Intern with every key, and refuse a missing, an extra or a mistyped key', () => {
    expect(validator.componentProblems('Intern', intern)).toEqual([]);
    expect(validator.componentProblems('InternDetail', { ...intern, icon_sha256: 'a'.repeat(64), created_by_you: true })).toEqual([]);
    const { hostname: _hostname, ...withoutHostname } = intern;
    expect(validator.componentProblems('Intern', withoutHostname)).not.toEqual([]);
    expect(validator.componentProblems('Intern', { ...intern, icon_sha256: null })).not.toEqual([]);
    expect(validator.componentProblems('Intern', { ...intern, progress: { ...intern.progress, step_number: 2.5 } })).not.toEqual([]);
    expect(validator.componentProblems('Intern', { ...intern, created_at: '2026-01-02T03:04:05Z' })).not.toEqual([]);
    expect(validator.componentProblems('InternDetail', intern)).not.toEqual([]);
  });

  it('give a list next_cursor exactly when has_more is true', () => {
    expect(validator.componentProblems('InternList', { data: [], has_more: false })).toEqual([]);
    expect(validator.componentProblems('InternList', { data: [], has_more: true, next_cursor: 'c' })).toEqual([]);
    expect(validator.componentProblems('InternList', { data: [], has_more: true })).not.toEqual([]);
    expect(validator.componentProblems('InternList', { data: [], has_more: false, next_cursor: 'c' })).not.toEqual([]);
    expect(validator.componentProblems('InternList', { data: [], has_more: false, next_cursor: null })).not.toEqual([]);
  });

  it('match every chunk the chunk builder makes, and nothing with a null content', () => {
    const chunks = new ChunkBuilder({ id: 'chatcmpl-0b0e6a52-7d7c-4a8e-9d43-3d7c2f1e9a10', model: 'local/scripted', created: 1767323045 });
    const made = [
      chunks.role(),
      chunks.content('hello'),
      chunks.toolCall('call_1', { kind: 'permission', operation: 'shell: ls', options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'] }),
      chunks.toolCall('call_2', { kind: 'elicitation', message: 'name?', fields: [{ name: 'answer', type: 'string', required: true }] }),
      chunks.finish('stop'),
      chunks.finish('tool_calls'),
      chunks.finish('length'),
      chunks.error(errorEnvelope('run_ended', 'the intern was suspended').error),
      chunks.error(errorEnvelope('stream_severed', 'the link broke').error),
      chunks.final('session-1', { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 }),
      chunks.final('session-1', null),
    ];
    for (const chunk of made) expect(validator.componentProblems('ChatCompletionChunk', chunk)).toEqual([]);
    const nullContent = { ...chunks.content('x'), choices: [{ index: 0, delta: { content: null }, finish_reason: null }] };
    expect(validator.componentProblems('ChatCompletionChunk', nullContent)).not.toEqual([]);
  });

  it('take a Run with every key of CONTRACT section 12, nullable ones as null, and refuse a missing, an extra or a mistyped key', () => {
    const question = { kind: 'permission', operation: 'shell: ls', options: ['allow_once', 'allow_always', 'reject_once', 'reject_always'] };
    const runId = '7c1d4e8f-2a3b-4c5d-8e9f-0a1b2c3d4e5f';
    const going = {
      id: runId,
      intern_id: intern.id,
      session_id: 'session-1',
      origin: 'chat',
      status: 'awaiting_input',
      finish_reason: 'tool_calls',
      model: 'local/scripted',
      usage: null,
      open_question: { tool_call_id: 'call_1', arguments: question, expires_at: '2026-01-02T03:09:05.678Z' },
      created_at: '2026-01-02T03:04:05.678Z',
      ended_at: null,
    };
    const ended = {
      ...going,
      origin: 'invoke',
      status: 'completed',
      finish_reason: 'stop',
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      open_question: null,
      ended_at: '2026-01-02T03:04:06.000Z',
    };
    expect(validator.componentProblems('Run', going)).toEqual([]);
    expect(validator.componentProblems('Run', ended)).toEqual([]);
    expect(validator.componentProblems('Run', { ...going, status: 'running', finish_reason: null, open_question: null })).toEqual([]);
    const { ended_at: _endedAt, ...withoutEnd } = ended;
    expect(validator.componentProblems('Run', withoutEnd)).not.toEqual([]);
    expect(validator.componentProblems('Run', { ...ended, workspace_id: intern.workspace_id })).not.toEqual([]);
    expect(validator.componentProblems('Run', { ...ended, status: 'done' })).not.toEqual([]);
    expect(validator.componentProblems('Run', { ...ended, origin: 'webhook' })).not.toEqual([]);

    expect(validator.componentProblems('RunPage', { data: [going, ended], has_more: true, next_cursor: 'c' })).toEqual([]);
    expect(validator.componentProblems('RunPage', { data: [], has_more: true })).not.toEqual([]);
    const inboxQuestion = { run_id: runId, session_id: 'session-1', ...going.open_question };
    expect(validator.componentProblems('QuestionInbox', { data: [inboxQuestion] })).toEqual([]);
    expect(validator.componentProblems('QuestionInbox', { data: [{ ...inboxQuestion, expires_at: null }] })).not.toEqual([]);
  });

  it('document the arguments of a provide_input call as one of the two questions', () => {
    expect(validator.componentProblems('ProvideInputArguments', { kind: 'elicitation', message: 'm', fields: [] })).toEqual([]);
    expect(validator.componentProblems('ProvideInputArguments', { kind: 'permission', operation: 'x', options: ['allow_once'] })).not.toEqual([]);
  });
});

describe('the response validator', () => {
  const id = '0b0e6a52-7d7c-4a8e-9d43-3d7c2f1e9a10';
  const correlation = { 'x-correlation-id': '5d9c2f62-1f0b-4b43-a8c5-0f0f0f0f0f0f' };
  const json = { ...correlation, 'content-type': 'application/json; charset=utf-8' };
  const suspended = { method: 'POST', url: `/api/v1/interns/${id}/suspend`, status: 200, headers: json, body: { suspended: true } };

  it('passes a documented answer', () => {
    expect(validator.problems(suspended)).toEqual([]);
  });

  it('flags an undocumented route or status, a wrong content type, a missing required header and a body off its schema', () => {
    expect(validator.problems({ ...suspended, url: `/api/v1/interns/${id}/resume` })).toEqual([expect.stringContaining('no documented operation')]);
    expect(validator.problems({ ...suspended, status: 201 })).toEqual([expect.stringContaining('201 is not documented')]);
    expect(validator.problems({ ...suspended, headers: { ...correlation, 'content-type': 'text/plain' } })).toEqual([
      expect.stringContaining('content type text/plain'),
    ]);
    expect(validator.problems({ ...suspended, headers: { 'content-type': 'application/json' } })).toEqual(['header x-correlation-id is required']);
    expect(validator.problems({ ...suspended, body: { suspended: 'yes' } })).not.toEqual([]);
  });

  it('holds an error to the reasons of its status on that route, and Retry-After to its schema', () => {
    const refusal = (reason: string, retryable: boolean) => ({ error: { code: 409, message: 'm', metadata: { reason, retryable } } });
    const invoke = { method: 'POST', url: `/api/v1/interns/${id}/invoke`, status: 409, headers: { ...json, 'retry-after': '1' } };
    expect(validator.problems({ ...invoke, body: refusal('busy', true) })).toEqual([]);
    expect(validator.problems({ ...invoke, body: refusal('busy', false) })).not.toEqual([]);
    expect(validator.problems({ ...invoke, body: refusal('name_taken', false) })).not.toEqual([]);
    expect(validator.problems({ ...invoke, headers: { ...json, 'retry-after': 'soon' }, body: refusal('busy', true) })).not.toEqual([]);
  });

  it('checks each event of a stream, its id, and its [DONE]', () => {
    const chunks = new ChunkBuilder({ id: `chatcmpl-${id}`, model: 'local/scripted', created: 1 });
    const events = [chunks.role(), chunks.content('hi'), chunks.finish('stop'), chunks.final('s', null)].map((chunk) => JSON.stringify(chunk));
    const headers = { ...correlation, 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-run-id': id };
    const sse = { method: 'POST', url: `/api/v1/interns/${id}/chat/completions`, status: 200, headers };
    expect(validator.streamProblems({ ...sse, events: [...events, '[DONE]'] })).toEqual([]);
    expect(validator.streamProblems({ ...sse, events })).toEqual(['the stream does not end with [DONE]']);
    expect(validator.streamProblems({ ...sse, events: ['{"id":"x"}', '[DONE]'] })).not.toEqual([]);
    expect(validator.streamProblems({ ...sse, headers: { ...correlation, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' }, events: [...events, '[DONE]'] })).toEqual([
      'header X-Run-Id is required',
    ]);

    // A run's stream: the same events; ids count the run's chunks from 1 (on after an answer), [DONE] has none.
    const run = { ...sse, method: 'GET', url: `/api/v1/interns/${id}/runs/${id}/stream`, events: [...events, '[DONE]'] };
    expect(validator.streamProblems({ ...run, ids: ['5', '6', '7', '8', undefined] })).toEqual([]);
    expect(validator.streamProblems({ ...run, ids: ['0', '6', '7', '8', undefined] })).toEqual([expect.stringMatching(/^event 0\/id must match pattern/)]);
    expect(validator.streamProblems({ ...run, ids: ['1', '2', '3', '4', '5'] })).toEqual([
      expect.stringMatching(/^event 4\/id boolean schema is false/),
      expect.stringMatching(/^event 4 must match "then" schema/),
    ]);
    expect(validator.streamProblems({ ...run, events: ['not json', '[DONE]'] })).toEqual(expect.arrayContaining([expect.stringMatching(/^event 0\/data /)]));
  });

  it('types each event of a chat response and a run stream as a chunk in `data`, with its `id`, ending with [DONE]', () => {
    const chunk = new ChunkBuilder({ id: `chatcmpl-${id}`, model: 'local/scripted', created: 1 }).content('hi');
    expect(validator.componentProblems('ChatCompletionEvent', { id: '1', data: chunk })).toEqual([]);
    expect(validator.componentProblems('ChatCompletionEvent', { data: chunk })).toEqual([]);
    expect(validator.componentProblems('ChatCompletionEvent', { data: '[DONE]' })).toEqual([]);
    expect(validator.componentProblems('ChatCompletionEvent', { id: '2', data: '[DONE]' })).not.toEqual([]);
    expect(validator.componentProblems('ChatCompletionEvent', { id: '1', data: 'DONE' })).not.toEqual([]);
    expect(validator.componentProblems('ChatCompletionEvent', { id: '1', event: 'chunk', data: chunk })).not.toEqual([]);
    expect(validator.componentProblems('ChatCompletionEvent', { id: '1', data: { ...chunk, object: 'chat.completion' } })).not.toEqual([]);
    const streams = [
      OPENAPI_DOCUMENT.paths['/interns/{intern_id}/chat/completions'].post?.responses['200'],
      OPENAPI_DOCUMENT.paths['/interns/{intern_id}/runs/{run_id}/stream'].get?.responses['200'],
    ];
    for (const response of streams) expect(response?.content).toEqual({ 'text/event-stream': { schema: { $ref: '#/components/schemas/ChatCompletionEvent' } } });
  });
});
