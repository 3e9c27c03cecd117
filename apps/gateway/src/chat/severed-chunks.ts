import { ChunkBuilder, errorEnvelope } from '@interns/contracts';

/**
 * The end of a response whose run went silent or lost frames (a chat response, or a run's stream): 502
 * `stream_severed`, then the final chunk (usage null). The relay writes them itself, with no `id:`.
 */
export function severedChunks(chunkId: string, created: number, response: { model: string; sessionId: string }): string[] {
  const chunks = new ChunkBuilder({ id: chunkId, model: response.model, created });
  return [
    JSON.stringify(chunks.error(errorEnvelope('stream_severed', 'the link to the run broke; the run may still be going').error)),
    JSON.stringify(chunks.final(response.sessionId, null)),
  ];
}
