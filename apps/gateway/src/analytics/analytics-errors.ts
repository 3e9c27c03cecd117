import { analyticsErrorEnvelope } from '@interns/contracts';
import { API_PREFIX } from '../http/api-prefix';
import type { HttpError } from '../http/http-errors';

const ANALYTICS_PATH = new RegExp(`^${API_PREFIX}/analytics(?:[/?#]|$)`);

/** Whether a request URL is under `/api/v1/analytics`, whose errors carry no `metadata` (CONTRACT section 2). */
export function isAnalyticsPath(url: string): boolean {
  return ANALYTICS_PATH.test(url);
}

/** An analytics answer: status and message only. */
export function analyticsHttpError(status: number, message: string): HttpError {
  return { status, body: analyticsErrorEnvelope(status, message), headers: {} };
}

/** The same answer (status, message, headers such as Retry-After) in the analytics shape. */
export function withoutMetadata(error: HttpError): HttpError {
  return { ...error, body: analyticsErrorEnvelope(error.body.error.code, error.body.error.message) };
}
