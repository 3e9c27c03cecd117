import { useId, useState, type FormEvent, type KeyboardEvent } from 'react';
import { internRoute, Link } from '../router';
import { Empty, ErrorNote } from '../ui/feedback';
import { Markdown } from '../ui/markdown';
import { QuestionCard } from './question-card';
import { useChat, type ApprovalMode, type Exchange } from './use-chat';

/** Chat with streamed Markdown output, questions answered in place, the approval mode and background runs. */
export function ChatPanel({ internId, status }: { internId: string; status: string | null }) {
  const running = status === 'running';
  const chat = useChat(internId);
  const [prompt, setPrompt] = useState('');
  const [approvalMode, setApprovalMode] = useState<ApprovalMode>('self-drive');
  const [background, setBackground] = useState(false);
  const promptId = useId();
  const submit = (event?: FormEvent) => {
    event?.preventDefault();
    if (prompt.trim() === '' || !running) return;
    chat.send(prompt, { approvalMode, background });
    setPrompt('');
  };
  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) submit();
  };

  return (
    <div className="chat stack">
      {status !== null && !running ? <Empty>This intern is not running: provision it (Interns, or the Provision button above) to chat with it.</Empty> : null}
      {chat.exchanges.length === 0 && running ? (
        <Empty>No messages yet: type a prompt below. With the built-in model, try “/say hello” or “/shell ls”.</Empty>
      ) : null}
      <ol className="chat-log" aria-label="Conversation">
        {chat.exchanges.map((exchange) => (
          <ExchangeView key={exchange.key} internId={internId} exchange={exchange} onAnswer={(content) => chat.answer(exchange, content)} />
        ))}
      </ol>
      <form className="chat-form stack" onSubmit={submit}>
        <label htmlFor={promptId}>Message</label>
        <textarea id={promptId} rows={3} value={prompt} onChange={(event) => setPrompt(event.target.value)} onKeyDown={onKeyDown} maxLength={32000} />
        <div className="chat-options">
          <fieldset>
            <legend>Approval</legend>
            <label className="checkbox">
              <input type="radio" name="approval" value="self-drive" checked={approvalMode === 'self-drive'} onChange={() => setApprovalMode('self-drive')} />
              Self-drive (consent on my behalf)
            </label>
            <label className="checkbox">
              <input type="radio" name="approval" value="manual" checked={approvalMode === 'manual'} onChange={() => setApprovalMode('manual')} />
              Manual (ask me before the shell runs)
            </label>
          </fieldset>
          <label className="checkbox">
            <input type="checkbox" checked={background} onChange={(event) => setBackground(event.target.checked)} />
            Background (the run goes on if I leave this page)
          </label>
        </div>
        <div className="actions">
          <button type="submit" className="primary" disabled={!running || prompt.trim() === ''}>
            Send
          </button>
          <button type="button" onClick={chat.restart} disabled={chat.exchanges.length === 0}>
            New conversation
          </button>
        </div>
        <p className="hint">Ctrl+Enter sends. Leaving the page while a reply streams cancels its run, unless it runs in the background.</p>
      </form>
    </div>
  );
}

function ExchangeView({ internId, exchange, onAnswer }: { internId: string; exchange: Exchange; onAnswer(content: string): void }) {
  const { stream } = exchange;
  return (
    <li className="exchange">
      <div className="bubble user">
        <span className="visually-hidden">You: </span>
        {exchange.prompt}
      </div>
      <div className="bubble assistant" aria-busy={exchange.phase === 'streaming'}>
        <span className="visually-hidden">Intern: </span>
        {stream.text === '' && exchange.phase === 'streaming' ? <span className="hint">Thinking…</span> : <Markdown text={stream.text} />}
        {exchange.phase === 'steered' ? <p className="hint">Added to the run already going in this conversation.</p> : null}
        {stream.error === null ? null : <p className="error-note">{stream.error}</p>}
        <ErrorNote error={exchange.error} />
        {exchange.phase === 'paused' && stream.question !== null ? (
          <QuestionCard question={stream.question.arguments} onAnswer={onAnswer} busy={false} error={null} />
        ) : null}
        <p className="meta">
          {exchange.phase === 'streaming' ? <span role="status">Streaming…</span> : null}
          {exchange.phase === 'done' && stream.usage !== null ? <span>{stream.usage.total_tokens} tokens</span> : null}
          {exchange.runId === null ? null : (
            <Link to={internRoute(internId, 'runs', exchange.runId)}>
              Run details<span className="visually-hidden"> of “{exchange.prompt.slice(0, 40)}”</span>
            </Link>
          )}
        </p>
      </div>
    </li>
  );
}
