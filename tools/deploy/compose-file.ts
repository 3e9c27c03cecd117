/**
 * A Compose file read the way Compose reads it, without the docker-compose binary (the tests need only
 * Node): YAML with merge keys (`<<: *app`), values interpolated from a given environment, then validated
 * against the Compose Specification's JSON schema (compose-spec.schema.json, vendored, draft-07). The short
 * forms the deployment tests read (ports, an environment list, a depends_on list, a build string) are then
 * expanded to the long forms `docker compose config` prints.
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { parse } from 'yaml';
import { type ComposeEnvironment, interpolate } from './compose-interpolation';

export interface ComposePort {
  target: number;
  published?: string;
  host_ip?: string;
  protocol?: string;
}

export interface ComposeVolumeMount {
  type: string;
  source: string;
  target: string;
  read_only?: boolean;
  volume?: { subpath?: string };
}

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile?: string; args?: Record<string, string> };
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[]; disable?: boolean };
  ports?: ComposePort[];
  /** As written: `source:target[:mode]` or the long form. */
  volumes?: (string | ComposeVolumeMount)[];
  restart?: string;
  entrypoint?: string[];
  command?: string[];
  profiles?: string[];
  user?: string;
  cap_add?: string[];
  cap_drop?: string[];
  security_opt?: string[];
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

export class ComposeValidationError extends Error {}

let validator: ValidateFunction | undefined;

function validate(document: unknown): void {
  if (validator === undefined) {
    const { $schema: _draft07, ...schema } = JSON.parse(readFileSync(new URL('./compose-spec.schema.json', import.meta.url), 'utf8'));
    // The schema names draft-07 by an https URI Ajv does not know; Ajv's default class is draft-07. Its union
    // types and untyped `additionalProperties` are what Ajv's strict type checks refuse, not mistakes.
    validator = new Ajv({ allErrors: true, allowUnionTypes: true, strictTypes: false }).compile(schema);
  }
  if (!validator(document)) {
    throw new ComposeValidationError(`not a valid Compose file: ${(validator.errors ?? []).map(describe).join('; ')}`);
  }
}

function describe(error: ErrorObject): string {
  const where = error.instancePath === '' ? '/' : error.instancePath;
  const extra = error.keyword === 'additionalProperties' ? ` ("${(error.params as { additionalProperty: string }).additionalProperty}")` : '';
  return `${where} ${error.message}${extra}`;
}

/** `[[host_ip:]published:]target[/protocol]`, one port (Compose also accepts ranges; this file has none). */
function longPort(port: unknown): ComposePort {
  if (typeof port === 'object' && port !== null) {
    const { target, published, ...rest } = port as Record<string, unknown>;
    return { ...rest, target: Number(target), ...(published === undefined ? {} : { published: String(published) }) };
  }
  const [mapping, protocol] = String(port).split('/');
  const parts = mapping.split(':');
  const target = Number(parts.at(-1));
  if (!Number.isInteger(target)) throw new ComposeValidationError(`port "${String(port)}": only single ports are read here`);
  const published = parts.at(-2);
  const hostIp = parts.length > 2 ? parts.slice(0, -2).join(':') : undefined;
  return { target, ...(published ? { published } : {}), ...(hostIp ? { host_ip: hostIp } : {}), ...(protocol ? { protocol } : {}) };
}

/** `KEY=value` list or mapping; a name without a value takes the environment's, as Compose does. */
function environmentMap(environment: unknown, env: ComposeEnvironment): Record<string, string> {
  const entries: [string, unknown][] = Array.isArray(environment)
    ? environment.map((item: string) => {
        const equals = item.indexOf('=');
        return equals === -1 ? [item, null] : [item.slice(0, equals), item.slice(equals + 1)];
      })
    : Object.entries(environment as Record<string, unknown>);
  const map: Record<string, string> = {};
  for (const [name, value] of entries) {
    const resolved = value === null ? env[name] : String(value);
    if (resolved !== undefined) map[name] = resolved;
  }
  return map;
}

function longService(service: Record<string, unknown>, baseDir: string, env: ComposeEnvironment): ComposeService {
  const result: Record<string, unknown> = { ...service };
  if (service.ports !== undefined) result.ports = (service.ports as unknown[]).map(longPort);
  if (service.environment !== undefined) result.environment = environmentMap(service.environment, env);
  if (Array.isArray(service.depends_on)) {
    result.depends_on = Object.fromEntries(service.depends_on.map((name: string) => [name, { condition: 'service_started' }]));
  }
  if (service.build !== undefined) {
    const build = typeof service.build === 'string' ? { context: service.build } : (service.build as { context?: string });
    // Compose resolves a local build context against the Compose file's directory.
    const context = build.context ?? '.';
    result.build = { dockerfile: 'Dockerfile', ...build, context: /^[a-z]+:\/\/|^git@/.test(context) ? context : resolve(baseDir, context) };
  }
  return result as ComposeService;
}

export interface ComposeOptions {
  /** What `${...}` reads; the tests pass none, so only the file's own defaults apply. */
  env?: ComposeEnvironment;
  /** The directory relative paths are resolved against: the Compose file's. */
  baseDir: string;
}

/** Parses, merges, interpolates and validates `text`; throws ComposeValidationError when Compose would refuse it. */
export function parseComposeFile(text: string, { env = {}, baseDir }: ComposeOptions): ComposeFile {
  const document = interpolate(parse(text, { merge: true }), env);
  validate(document);
  const { services = {}, ...rest } = document as { services?: Record<string, Record<string, unknown>> };
  return {
    ...rest,
    services: Object.fromEntries(Object.entries(services).map(([name, service]) => [name, longService(service, baseDir, env)])),
  };
}

export function readComposeFile(path: string, env: ComposeEnvironment = {}): ComposeFile {
  return parseComposeFile(readFileSync(path, 'utf8'), { env, baseDir: dirname(resolve(path)) });
}
