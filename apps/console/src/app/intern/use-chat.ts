import { useQueryClient } from '@tanstack/react-query';
import { useCallback, useEffect, useRef, useState } from 'react';
import { applyStreamData, EMPTY_STREAM, type StreamState } from '../api/chat-stream';
import { path } from '../api/client';
import { readEventStream } from '../api/sse';
import { queryKeys } from '../interns/live-updates';
import { useSession } from '../session';

export type ApprovalMode = 'self-drive' | 'manual';

/** One prompt and what came back for it (across the responses its answers open). */
export interface Exchange {
  key: number;
  prompt: string;
  runId: string | null;
  stream: StreamState;
  phase: 'streaming' | 'paused' | 'done' | 'steered';
  error: unknown;
}

const PROVIDE_INPUT = 'service.provide_input';

/**
 * A chat with one intern (interface section 6): each prompt's stream read as it arrives, a question answered in the
 * same session (the stream goes on in a new response), the session kept for the next prompt. Leaving the page aborts
 * a stream still open, which cancels its run unless it was started with `background`.
 */
export function useChat(internId: string) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const [exchanges, setExchanges] = useState<Exchange[]>([]);
  const [sessionId, setSessionId] = useState<string | null>(null);
  const open = useRef<AbortController | null>(null);
  const nextKey = useRef(0);
  /** Each exchange's stream as read so far: the source of what is shown, and where an answer's stream goes on. */
  const streams = useRef(new Map<number, StreamState>());

  useEffect(() => () => open.current?.abort(), []);

  const update = useCallback((key: number, change: (exchange: Exchange) => Exchange) => {
    setExchanges((all) => all.map((exchange) => (exchange.key === key ? change(exchange) : exchange)));
  }, []);

  const stream = useCallback(
    async (key: number, body: Record<string, unknown>) => {
      const controller = new AbortController();
      open.current = controller;
      try {
        const response = await client.stream(path`/interns/${internId}/chat/completions`, { json: body, signal: controller.signal });
        if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
          // 202 steered: the prompt joined the session's run that is still going.
          update(key, (exchange) => ({ ...exchange, phase: 'steered' }));
          return;
        }
        const runId = response.headers.get('x-run-id');
        update(key, (exchange) => ({ ...exchange, runId: runId ?? exchange.runId }));
        let current = streams.current.get(key) ?? EMPTY_STREAM;
        await readEventStream(response, (event) => {
          current = applyStreamData(current, event.data);
          streams.current.set(key, current);
          const shown = current;
          update(key, (exchange) => ({ ...exchange, stream: shown }));
        });
        if (current.sessionId !== null) setSessionId(current.sessionId);
        const paused = current.question !== null;
        update(key, (exchange) => ({ ...exchange, phase: paused ? 'paused' : 'done' }));
      } catch (error) {
        if (controller.signal.aborted) return;
        update(key, (exchange) => ({ ...exchange, phase: 'done', error }));
      } finally {
        if (open.current === controller) open.current = null;
        void queryClient.invalidateQueries({ queryKey: queryKeys.runs(internId) });
      }
    },
    [client, internId, queryClient, update],
  );

  const send = useCallback(
    (prompt: string, options: { approvalMode: ApprovalMode; background: boolean }) => {
      const key = nextKey.current++;
      setExchanges((all) => [...all, { key, prompt, runId: null, stream: EMPTY_STREAM, phase: 'streaming', error: null }]);
      const body: Record<string, unknown> = {
        stream: true,
        messages: [{ role: 'user', content: prompt }],
        approval_mode: options.approvalMode,
      };
      if (sessionId !== null) body.session_id = sessionId;
      if (options.background) body.background = true;
      void stream(key, body);
    },
    [sessionId, stream],
  );

  const answer = useCallback(
    (exchange: Exchange, content: string) => {
      const question = exchange.stream.question;
      const session = exchange.stream.sessionId ?? sessionId;
      if (question === null || session === null) return;
      const resumed = { ...(streams.current.get(exchange.key) ?? exchange.stream), question: null, finishReason: null, done: false };
      streams.current.set(exchange.key, resumed);
      update(exchange.key, (current) => ({ ...current, phase: 'streaming', error: null, stream: resumed }));
      void stream(exchange.key, {
        stream: true,
        session_id: session,
        messages: [
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: question.toolCallId, type: 'function', function: { name: PROVIDE_INPUT, arguments: '{}' } }],
          },
          { role: 'tool', tool_call_id: question.toolCallId, content },
        ],
      });
    },
    [sessionId, stream, update],
  );

  const restart = useCallback(() => {
    open.current?.abort();
    streams.current.clear();
    setExchanges([]);
    setSessionId(null);
  }, []);

  return { exchanges, sessionId, send, answer, restart, streaming: exchanges.some((exchange) => exchange.phase === 'streaming') };
}
