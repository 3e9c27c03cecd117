import type { Platform } from '../platform';
import type { JsonAnswer, SseResponse } from '../sse-client';
import { API } from './chat.fixture';
import { KEYS } from './platform-identities.fixture';

/** Runs as resources (CONTRACT section 12): paths and readers the run tests share. */
export const runsPath = (internId: string) => `${API}/interns/${internId}/runs`;
export const runPath = (internId: string, runId: string) => `${runsPath(internId)}/${runId}`;

/** One SSE event with its `id:` (`[DONE]` and the gateway's own severed chunks have none). */
export interface RunEvent {
  id: string | undefined;
  data: string;
}

/** A run's stream (GET): an event stream, or the JSON refusal. */
export function followRun(
  platform: Platform,
  internId: string,
  runId: string,
  options: { token?: string; headers?: Record<string, string>; query?: string } = {},
): Promise<SseResponse | JsonAnswer> {
  return platform.getStream(`${runPath(internId, runId)}/stream${options.query ?? ''}`, options.token ?? KEYS.alice, options.headers);
}

/** The events of a stream so far, each with its id. */
export function runEventsOf(stream: SseResponse): RunEvent[] {
  return stream.events.map((data, index) => ({ id: stream.ids[index], data }));
}

/** A run as its owner's caller sees it (GET answered 200). */
export async function runOf(platform: Platform, internId: string, runId: string, token: string = KEYS.alice) {
  const response = await platform.api(runPath(internId, runId), { token });
  if (response.status !== 200) throw new Error(`GET run answered ${response.status}: ${JSON.stringify(response.body)}`);
  return response.body;
}

