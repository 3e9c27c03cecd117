import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { ApiError } from '../api/api-error';
import { path } from '../api/client';
import type { Intern } from '../api/types';
import { navigate } from '../router';
import { useSession } from '../session';
import { ConfirmDialog } from '../ui/confirm-dialog';
import { ErrorNote } from '../ui/feedback';
import { InternFieldInputs, nullIfEmpty, type InternFields } from './create-intern-form';
import { queryKeys } from './live-updates';

/** What section 5 allows from each status; the API stays the judge (a 409 shows its message). */
const PROVISIONABLE = new Set(['stopped', 'failed']);
const SUSPENDABLE = new Set(['running', 'queued', 'provisioning', 'awaiting_chatapp_install']);
const UPDATABLE = (status: string) => status !== 'destroying' && status !== 'destroy_failed';

/** A delete of a failed teardown whose archive step failed needs the caller to accept the workspace's loss. */
export function needsWorkspaceLossAcknowledgement(intern: Intern): boolean {
  return intern.status === 'destroy_failed' && (intern.last_failure_message ?? '').startsWith('workspace_archive_failed');
}

type Dialog = 'suspend' | 'delete' | 'edit' | null;

/** Provision, suspend (confirmed), edit and delete (confirmed, with the acknowledgement when needed) of one intern. */
export function InternActions({ intern, afterDelete }: { intern: Intern; afterDelete?: 'list' }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const [dialog, setDialog] = useState<Dialog>(null);
  const [acknowledged, setAcknowledged] = useState(false);
  const [fields, setFields] = useState<InternFields>(() => fieldsOf(intern));
  const refresh = () => {
    void queryClient.invalidateQueries({ queryKey: queryKeys.interns });
    void queryClient.invalidateQueries({ queryKey: queryKeys.intern(intern.id) });
  };
  const action = useMutation({
    mutationFn: async (kind: 'provision' | 'suspend' | 'delete' | 'edit') => {
      const target = path`/interns/${intern.id}`;
      if (kind === 'provision') return client.json(`${target}/provision`, { method: 'POST' });
      if (kind === 'suspend') return client.json(`${target}/suspend`, { method: 'POST' });
      if (kind === 'edit') {
        return client.json(target, {
          method: 'PATCH',
          json: {
            name: fields.name.trim(),
            description: nullIfEmpty(fields.description),
            instructions: nullIfEmpty(fields.instructions),
            model: nullIfEmpty(fields.model),
          },
        });
      }
      return client.json(target, { method: 'DELETE', json: { acknowledge_workspace_loss: acknowledged } });
    },
    onSuccess: (_answer, kind) => {
      setDialog(null);
      refresh();
      if (kind === 'delete' && afterDelete === 'list') navigate({ page: 'interns' });
    },
  });
  const open = (next: Dialog) => {
    action.reset();
    setAcknowledged(false);
    if (next === 'edit') setFields(fieldsOf(intern));
    setDialog(next);
  };
  const close = () => setDialog(null);
  const acknowledgement = needsWorkspaceLossAcknowledgement(intern) || (action.error instanceof ApiError && action.error.reason === 'workspace_loss_not_acknowledged');

  return (
    <div className="row-actions">
      {PROVISIONABLE.has(intern.status) ? (
        <button type="button" onClick={() => action.mutate('provision')} disabled={action.isPending} aria-label={`Provision ${intern.name}`}>
          Provision
        </button>
      ) : null}
      {SUSPENDABLE.has(intern.status) ? (
        <button type="button" onClick={() => open('suspend')} aria-label={`Suspend ${intern.name}`}>
          Suspend
        </button>
      ) : null}
      {UPDATABLE(intern.status) ? (
        <button type="button" onClick={() => open('edit')} aria-label={`Edit ${intern.name}`}>
          Edit
        </button>
      ) : null}
      <button type="button" className="danger" onClick={() => open('delete')} aria-label={`Delete ${intern.name}`}>
        Delete
      </button>
      {dialog === null ? <ErrorNote error={action.error} /> : null}

      <ConfirmDialog
        open={dialog === 'suspend'}
        title={`Suspend ${intern.name}?`}
        confirmLabel="Suspend"
        busy={action.isPending}
        onConfirm={() => action.mutate('suspend')}
        onCancel={close}
      >
        <p>Its runtime stops and its active runs end; its disk and settings are kept. Provision it to start it again.</p>
        <ErrorNote error={action.error} />
      </ConfirmDialog>

      <ConfirmDialog
        open={dialog === 'delete'}
        title={`Delete ${intern.name}?`}
        confirmLabel="Delete"
        confirmDisabled={acknowledgement && !acknowledged}
        busy={action.isPending}
        onConfirm={() => action.mutate('delete')}
        onCancel={close}
      >
        <p>Its runs end, its runtime stops, its workspace is archived and its vault and disk are removed. This cannot be undone.</p>
        {acknowledgement ? (
          <label className="checkbox">
            <input type="checkbox" checked={acknowledged} onChange={(event) => setAcknowledged(event.target.checked)} />
            The workspace archive failed: delete anyway and accept that the workspace is lost
          </label>
        ) : null}
        <ErrorNote error={action.error} />
      </ConfirmDialog>

      <ConfirmDialog
        open={dialog === 'edit'}
        title={`Edit ${intern.name}`}
        confirmLabel="Save"
        className="dialog-wide"
        busy={action.isPending}
        onConfirm={() => action.mutate('edit')}
        onCancel={close}
      >
        <div className="form-grid">
          <InternFieldInputs fields={fields} onChange={setFields} idPrefix={`edit-${intern.id}`} />
        </div>
        <p className="hint">A model change applies from the next provision.</p>
        <ErrorNote error={action.error} />
      </ConfirmDialog>
    </div>
  );
}

function fieldsOf(intern: Intern): InternFields {
  return { name: intern.name, description: intern.description ?? '', instructions: intern.instructions ?? '', model: intern.model ?? '' };
}
