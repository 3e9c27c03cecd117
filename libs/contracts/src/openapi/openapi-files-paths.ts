/**
 * The operations of an intern's files (interface section 21), relative to `API_BASE_PATH`, and their schemas. Intern
 * routes (any credential that sees the intern, its own intern key included; none is a lifecycle write). `{path}` is the
 * rest of the request path, relative to the workspace, and may hold `/`.
 */
import { FILE_ENTRY_TYPES, FILE_LIST_MAX_ENTRIES } from '../files';
import { JsonSchema, ref, strictObject, TIMESTAMP } from './json-schema';
import { INTERN_ACCESS, OpenApiParameter, OpenApiPathItem, parameterRef, SERVICE_FAILURES } from './openapi-operation';
import { commonHeaders, errorResponses, jsonResponse } from './openapi-responses';

export const FILE_SCHEMAS: Record<string, JsonSchema> = {
  FileEntry: {
    ...strictObject({
      name: { type: 'string', minLength: 1 },
      type: { enum: [...FILE_ENTRY_TYPES] },
      size: { type: 'integer', minimum: 0 },
      modified_at: TIMESTAMP,
    }),
    description: 'A symlink is listed as itself (`size`: the length of its target), never followed; a FIFO, socket or device is `other`.',
  },
  FileListing: strictObject({
    data: { type: 'array', maxItems: FILE_LIST_MAX_ENTRIES, items: ref('FileEntry') },
    truncated: { type: 'boolean' },
  }),
};

const FILE_PATH: OpenApiParameter = {
  name: 'path',
  in: 'path',
  required: true,
  description:
    'Relative to the workspace, `/` separated (the rest of the request path). Absolute paths, `.`, `..` and empty segments: 400; ' +
    'a symlink that leads out of the workspace, or a symlink loop, anywhere on the way: 400 `invalid_body`.',
  schema: { type: 'string' },
};

const RECURSIVE: OpenApiParameter = {
  name: 'recursive',
  in: 'query',
  description: '`true` deletes a directory with everything in it; without it a non-empty directory is refused (400). Anything but `true` or `false`: 400.',
  schema: { enum: ['true', 'false'], default: 'false' },
};

/** Statuses a files route answers besides success: the intern's access, the path, teardown, and the services. */
const FILE_REFUSALS = [...INTERN_ACCESS, 'invalid_body', 'intern_busy', ...SERVICE_FAILURES] as const;

const LISTING = jsonResponse(
  `A directory: its entries sorted by name (bytewise), at most ${FILE_LIST_MAX_ENTRIES}; \`truncated\` says there were more.`,
  ref('FileListing'),
);

export const workspaceRoot: OpenApiPathItem = {
  parameters: [parameterRef('InternId')],
  get: {
    operationId: 'listWorkspace',
    tags: ['Files'],
    summary: "The workspace's top directory",
    description: 'As `GET /interns/{intern_id}/files/` (an empty path).',
    responses: { '200': LISTING, ...errorResponses([...FILE_REFUSALS]) },
  },
};

export const workspaceFile: OpenApiPathItem = {
  parameters: [parameterRef('InternId'), FILE_PATH],
  get: {
    operationId: 'readWorkspaceFile',
    tags: ['Files'],
    summary: 'A directory listing, or a file\'s bytes',
    description:
      "Read inside the intern's sandbox, as its user. A symlink that resolves inside the workspace is read through. A FIFO, " +
      'socket or device: 400. Missing: 404. Works while the intern is suspended; not while it is torn down (409).',
    responses: {
      '200': {
        ...LISTING,
        description: 'A directory: its listing (JSON). A regular file: its bytes, streamed.',
        headers: {
          ...commonHeaders(),
          ETag: { description: "A file's size, inode and modification time (ns): it changes when the file does.", schema: { type: 'string', pattern: '^"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"$' } },
        },
        content: {
          'application/json': { schema: ref('FileListing') },
          'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } },
        },
      },
      ...errorResponses([...FILE_REFUSALS]),
    },
  },
  put: {
    operationId: 'writeWorkspaceFile',
    tags: ['Files'],
    summary: 'Upload a file (create or replace)',
    description:
      'The raw body, any content type, at most `FILE_UPLOAD_MAX_BYTES` (default 104857600; more: 413), streamed into a ' +
      'temporary file beside the target and renamed over it (atomic), as the intern\'s user; missing parent directories are ' +
      "made. Counts against the workspace quota (`WORKSPACE_QUOTA_BYTES`, `WORKSPACE_QUOTA_INODES`): a body that cannot fit " +
      'is refused with 409 `limit_reached` before it lands (by its `Content-Length`) or when the disk fills, and nothing of ' +
      'it remains. A path that names a directory: 400.',
    requestBody: { required: false, content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } } },
    responses: {
      '200': jsonResponse('Replaced an existing file (or symlink: the link itself is replaced).', ref('FileEntry')),
      '201': jsonResponse('Created.', ref('FileEntry')),
      ...errorResponses([...FILE_REFUSALS, 'limit_reached', 'payload_too_large']),
    },
  },
  delete: {
    operationId: 'deleteWorkspaceFile',
    tags: ['Files'],
    summary: 'Delete a file, a symlink (not its target), an empty directory, or with `recursive=true` a tree',
    parameters: [RECURSIVE],
    responses: {
      '204': { description: 'Deleted.', headers: commonHeaders() },
      ...errorResponses([...FILE_REFUSALS]),
    },
  },
};
