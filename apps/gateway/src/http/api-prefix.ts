// http/: the HTTP building blocks every route folder uses, free of routes and services: the `/api/v1` prefix, body
// and path rules, client addresses, the error envelope, and the answers of the HTTP layer and the framework itself.
import type { INestApplication } from '@nestjs/common';
import { API_BASE_PATH } from '@interns/contracts/openapi';

/**
 * Every route of the API is under `/api/v1` (the OpenAPI document's server URL). It is set once for the app,
 * so controllers name only their own part (`@Controller('interns')`); route classification and the
 * deprecation links match the full paths with this same constant.
 */
export const API_PREFIX = API_BASE_PATH;

/**
 * Health and metrics (the health lib's routes) are per-process operating endpoints, not part of the API:
 * probes and scrapers find them at the root, as on every other service.
 */
export const OPERATING_ROUTES: readonly string[] = ['health/live', 'health/ready', 'metrics'];

export function applyApiPrefix(app: INestApplication): void {
  app.setGlobalPrefix(API_PREFIX, { exclude: [...OPERATING_ROUTES] });
}
