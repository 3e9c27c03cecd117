import { useId, useState, type FormEvent } from 'react';
import type { ElicitationArguments, PermissionArguments, QuestionArguments } from '../api/types';
import { ErrorNote } from '../ui/feedback';

const OPTION_LABELS: Record<string, string> = {
  allow_once: 'Allow once',
  allow_always: 'Allow always',
  reject_once: 'Reject once',
  reject_always: 'Reject always',
};

export interface QuestionCardProps {
  question: QuestionArguments;
  /** The tool message's content (interface section 6): an option or `cancel`; for a question, the JSON action. */
  onAnswer(content: string): void;
  busy: boolean;
  error: unknown;
  expiresAt?: string;
}

/** A paused run's question, answered in place: a permission's offered options, or a question's fields. */
export function QuestionCard(props: QuestionCardProps) {
  return props.question.kind === 'permission' ? (
    <PermissionCard {...props} question={props.question} />
  ) : (
    <ElicitationCard {...props} question={props.question} />
  );
}

function PermissionCard({ question, onAnswer, busy, error, expiresAt }: QuestionCardProps & { question: PermissionArguments }) {
  const titleId = useId();
  return (
    <div className="question-card" role="group" aria-labelledby={titleId}>
      <h3 id={titleId}>Permission needed</h3>
      <p>
        The intern wants to run: <code className="operation">{question.operation}</code>
      </p>
      {expiresAt === undefined ? null : <p className="hint">Unanswered, the run is cancelled at {new Date(expiresAt).toLocaleTimeString()}.</p>}
      <div className="actions">
        {question.options.map((option) => (
          <button
            key={option}
            type="button"
            className={option.startsWith('allow') ? 'primary' : undefined}
            disabled={busy}
            onClick={() => onAnswer(option)}
          >
            {OPTION_LABELS[option] ?? option}
          </button>
        ))}
        <button type="button" disabled={busy} onClick={() => onAnswer('cancel')}>
          Cancel the run
        </button>
      </div>
      <ErrorNote error={error} />
    </div>
  );
}

function ElicitationCard({ question, onAnswer, busy, error, expiresAt }: QuestionCardProps & { question: ElicitationArguments }) {
  const titleId = useId();
  const idPrefix = useId();
  const [values, setValues] = useState<Record<string, string | boolean>>({});
  const accept = (event: FormEvent) => {
    event.preventDefault();
    const content: Record<string, unknown> = {};
    for (const field of question.fields) {
      const value = values[field.name];
      if (field.type === 'boolean') content[field.name] = value === true;
      else if ((field.type === 'number' || field.type === 'integer') && typeof value === 'string' && value !== '') content[field.name] = Number(value);
      else if (typeof value === 'string' && value !== '') content[field.name] = value;
    }
    onAnswer(JSON.stringify({ action: 'accept', content }));
  };
  return (
    <form className="question-card" aria-labelledby={titleId} onSubmit={accept}>
      <h3 id={titleId}>Question</h3>
      <p className="question-text">{question.message}</p>
      {expiresAt === undefined ? null : <p className="hint">Unanswered, the run is cancelled at {new Date(expiresAt).toLocaleTimeString()}.</p>}
      {question.fields.map((field) => {
        const id = `${idPrefix}-${field.name}`;
        if (field.type === 'boolean') {
          return (
            <label key={field.name} className="checkbox">
              <input type="checkbox" checked={values[field.name] === true} onChange={(event) => setValues({ ...values, [field.name]: event.target.checked })} />
              {field.name}
            </label>
          );
        }
        return (
          <div key={field.name} className="field">
            <label htmlFor={id}>
              {field.name}
              {field.required ? ' (required)' : ''}
            </label>
            <input
              id={id}
              type={field.type === 'number' || field.type === 'integer' ? 'number' : 'text'}
              required={field.required}
              value={typeof values[field.name] === 'string' ? (values[field.name] as string) : ''}
              onChange={(event) => setValues({ ...values, [field.name]: event.target.value })}
            />
          </div>
        );
      })}
      <div className="actions">
        <button type="submit" className="primary" disabled={busy}>
          Answer
        </button>
        <button type="button" disabled={busy} onClick={() => onAnswer(JSON.stringify({ action: 'decline' }))}>
          Decline
        </button>
        <button type="button" disabled={busy} onClick={() => onAnswer(JSON.stringify({ action: 'cancel' }))}>
          Cancel the run
        </button>
      </div>
      <ErrorNote error={error} />
    </form>
  );
}
