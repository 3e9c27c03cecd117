import { Validator } from '@seriousme/openapi-schema-validator';
import { ERROR_REASONS } from '../errors';
import { RUN_STATUSES } from '../runs';
import { OPENAPI_DOCUMENT } from './openapi-document';
import { HTTP_METHODS, OpenApiOperation } from './openapi-operation';

const operations: [string, OpenApiOperation][] = Object.entries(OPENAPI_DOCUMENT.paths).flatMap(([template, item]) =>
  HTTP_METHODS.flatMap((method) => {
    const operation = item[method];
    return operation === undefined ? [] : [[`${method.toUpperCase()} ${template}`, operation] as [string, OpenApiOperation]];
  }),
);
const isPublic = (operation: OpenApiOperation) => operation.security !== undefined && operation.security.length === 0;
const isAnalytics = (route: string) => route.includes('/analytics/');

it('is a valid OpenAPI 3.1 document', async () => {
  const validator = new Validator();
  const result = await validator.validate(structuredClone(OPENAPI_DOCUMENT) as unknown as Record<string, unknown>);
  expect(result.errors).toBeUndefined();
  expect(result.valid).toBe(true);
  expect(validator.version).toBe('3.1');
});

it('describes interface version 1.0.0 under the server /api/v1', () => {
  expect(OPENAPI_DOCUMENT.openapi).toBe('3.1.0');
  expect(OPENAPI_DOCUMENT.info.version).toBe('1.0.0');
  expect(OPENAPI_DOCUMENT.servers.map((server) => server.url)).toEqual(['/api/v1']);
});

it('names every operation once', () => {
  const ids = operations.map(([, operation]) => operation.operationId);
  expect(new Set(ids).size).toBe(ids.length);
});

it('gives every credentialed route a 401 and every route the correlation id on every response', () => {
  for (const [route, operation] of operations) {
    if (!isPublic(operation)) expect({ route, has401: '401' in operation.responses }).toEqual({ route, has401: true });
    for (const [status, response] of Object.entries(operation.responses)) {
      expect({ route, status, correlation: response.headers?.['x-correlation-id'] }).toEqual({
        route,
        status,
        correlation: { $ref: '#/components/headers/CorrelationId' },
      });
    }
  }
});

it('answers errors of intern routes with metadata whose reason has the status of the response', () => {
  for (const [route, operation] of operations) {
    if (isAnalytics(route)) continue;
    for (const [status, response] of Object.entries(operation.responses)) {
      if (Number(status) < 400 || status === '401') continue;
      const error = (response.content?.['application/json']?.schema?.properties as { error: { properties: Record<string, unknown>; required: string[] } })
        .error;
      expect({ route, status, required: error.required }).toEqual({ route, status, required: ['code', 'message', 'metadata'] });
      const metadata = error.properties.metadata as { oneOf?: { properties: { reason: { const: string } } }[]; properties?: { reason: { const: string } } };
      const reasons = (metadata.oneOf ?? [metadata]).map((variant) => variant.properties?.reason.const as keyof typeof ERROR_REASONS);
      for (const reason of reasons) expect({ route, reason, status: ERROR_REASONS[reason].status }).toEqual({ route, reason, status: Number(status) });
    }
  }
});

it('marks exactly the two daemon aliases deprecated, with Deprecation and Link on every response', () => {
  const deprecated = operations.filter(([, operation]) => operation.deprecated === true);
  expect(deprecated.map(([route]) => route).sort()).toEqual([
    'GET /interns/{intern_id}/daemon-access',
    'POST /interns/{intern_id}/daemon-access/sign',
  ]);
  for (const [, operation] of deprecated) {
    for (const response of Object.values(operation.responses)) {
      expect(Object.keys(response.headers ?? {})).toEqual(expect.arrayContaining(['Deprecation', 'Link']));
    }
  }
});

it('documents the Intern with every key required and the list cursor only with has_more', () => {
  const { Intern, InternDetail, InternList } = OPENAPI_DOCUMENT.components.schemas;
  // CONTRACT section 3, in its order.
  const keys = ['id', 'name', 'description', 'instructions', 'model', 'status', 'last_failure_message', 'progress', 'hostname',
    'workspace_id', 'vault_id', 'attached_vault_id', 'created_at', 'updated_at'];
  expect(Intern.required).toEqual(keys);
  expect(Object.keys(Intern.properties as object)).toEqual(keys);
  expect(InternDetail.required).toEqual([...keys, 'icon_sha256']);
  expect(Object.keys(InternDetail.properties as object)).toEqual([...keys, 'icon_sha256', 'created_by_you']);
  expect(InternList.then).toEqual({ type: 'object', properties: { next_cursor: { type: 'string', minLength: 1 } }, required: ['next_cursor'] });
  expect(InternList.else).toEqual({ type: 'object', properties: { next_cursor: false } });
});

it('documents the Run with every key of section 12 required, in its order, and a page of runs like the intern list', () => {
  const { Run, RunPage, RunStatus, InternList } = OPENAPI_DOCUMENT.components.schemas;
  const keys = ['id', 'intern_id', 'session_id', 'origin', 'status', 'finish_reason', 'model', 'usage', 'open_question', 'created_at', 'ended_at'];
  expect(Run.required).toEqual(keys);
  expect(Object.keys(Run.properties as object)).toEqual(keys);
  expect(Run.additionalProperties).toBe(false);
  expect(RunStatus.enum).toEqual([...RUN_STATUSES]);
  const { description: _runs, ...runPage } = RunPage;
  const { description: _interns, ...internList } = InternList;
  expect(runPage).toEqual({ ...internList, properties: { ...(internList.properties as object), data: { type: 'array', items: { $ref: '#/components/schemas/Run' } } } });
});

it('puts the routes of section 12 under the Runs tag, and names the run in every chat response and in a run stream', () => {
  const runRoutes = operations.filter(([, operation]) => operation.tags.includes('Runs')).map(([route]) => route);
  expect(runRoutes.sort()).toEqual([
    'GET /interns/{intern_id}/questions',
    'GET /interns/{intern_id}/runs',
    'GET /interns/{intern_id}/runs/{run_id}',
    'GET /interns/{intern_id}/runs/{run_id}/stream',
    'POST /interns/{intern_id}/runs/{run_id}/answer',
    'POST /interns/{intern_id}/runs/{run_id}/cancel',
  ]);
  expect(OPENAPI_DOCUMENT.tags.map((tag) => tag.name)).toContain('Runs');
  const chat = OPENAPI_DOCUMENT.paths['/interns/{intern_id}/chat/completions'].post?.responses;
  const stream = OPENAPI_DOCUMENT.paths['/interns/{intern_id}/runs/{run_id}/stream'].get?.responses;
  for (const response of [chat?.['200'], chat?.['202'], stream?.['200']]) {
    expect(response?.headers?.['X-Run-Id']).toEqual({ $ref: '#/components/headers/RunId' });
  }
  // The same events, ids and headers as a chat response.
  expect({ ...stream?.['200'], description: '' }).toEqual({ ...chat?.['200'], description: '' });
});
