import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import type { Intern } from '../api/types';
import { useSession } from '../session';
import { ErrorNote } from '../ui/feedback';
import { queryKeys } from './live-updates';

/** The fields create and update share (interface section 4's body rules are the API's to enforce). */
export interface InternFields {
  name: string;
  description: string;
  instructions: string;
  model: string;
}

export const EMPTY_FIELDS: InternFields = { name: '', description: '', instructions: '', model: '' };

/** Empty text means "none" (`null`; for the model, the workspace default). */
export function nullIfEmpty(text: string): string | null {
  return text.trim() === '' ? null : text;
}

export function InternFieldInputs({ fields, onChange, idPrefix }: { fields: InternFields; onChange(fields: InternFields): void; idPrefix: string }) {
  const set = (key: keyof InternFields) => (event: { target: { value: string } }) => onChange({ ...fields, [key]: event.target.value });
  return (
    <>
      <label htmlFor={`${idPrefix}-name`}>Name</label>
      <input
        id={`${idPrefix}-name`}
        required
        minLength={2}
        maxLength={40}
        pattern="[a-z][a-z0-9]*(-[a-z0-9]+)*"
        aria-describedby={`${idPrefix}-name-hint`}
        value={fields.name}
        onChange={set('name')}
      />
      <span id={`${idPrefix}-name-hint`} className="hint">
        2-40 lowercase letters, digits and single hyphens, starting with a letter.
      </span>
      <label htmlFor={`${idPrefix}-description`}>Description (optional)</label>
      <input id={`${idPrefix}-description`} maxLength={2000} value={fields.description} onChange={set('description')} />
      <label htmlFor={`${idPrefix}-instructions`}>Instructions (optional)</label>
      <textarea id={`${idPrefix}-instructions`} rows={3} value={fields.instructions} onChange={set('instructions')} />
      <label htmlFor={`${idPrefix}-model`}>Model (optional, author/name; empty for the workspace default)</label>
      <input id={`${idPrefix}-model`} maxLength={200} placeholder="local/scripted" value={fields.model} onChange={set('model')} />
    </>
  );
}

export function CreateInternForm() {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const [fields, setFields] = useState<InternFields>(EMPTY_FIELDS);
  const [provision, setProvision] = useState(true);
  const create = useMutation({
    mutationFn: () =>
      client.json<Intern>('/interns', {
        json: {
          name: fields.name.trim(),
          description: nullIfEmpty(fields.description),
          instructions: nullIfEmpty(fields.instructions),
          model: nullIfEmpty(fields.model),
          provision,
        },
      }),
    onSuccess: () => {
      setFields(EMPTY_FIELDS);
      void queryClient.invalidateQueries({ queryKey: queryKeys.interns });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <form className="card form-grid" onSubmit={submit} aria-labelledby="create-intern-title">
      <h2 id="create-intern-title">New intern</h2>
      <InternFieldInputs fields={fields} onChange={setFields} idPrefix="create" />
      <label className="checkbox">
        <input type="checkbox" checked={provision} onChange={(event) => setProvision(event.target.checked)} />
        Provision it now (boot its runtime)
      </label>
      <ErrorNote error={create.error} />
      {create.isSuccess ? (
        <p role="status" className="hint">
          Created {create.data.name}.
        </p>
      ) : null}
      <button type="submit" className="primary" disabled={create.isPending}>
        {create.isPending ? 'Creating…' : 'Create intern'}
      </button>
    </form>
  );
}
