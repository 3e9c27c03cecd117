import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { path } from '../api/client';
import type { Secret } from '../api/types';
import { useSession } from '../session';
import { ConfirmDialog } from '../ui/confirm-dialog';
import { Empty, ErrorNote, Loading, TableScroll } from '../ui/feedback';
import { formatTime, listFromText } from '../ui/format';

/** The vault routes of one scope (interface section 18): the workspace's, or an intern's own vault. */
function scopePath(internId: string | null): string {
  return internId === null ? '/vault/secrets' : path`/vault/interns/${internId}/secrets`;
}

/**
 * The intern's own secrets and the workspace's: names, hosts and fingerprints only (the API never returns a value).
 * A value is typed into a password field, sent once, and the field is emptied: the console never shows it again.
 */
export function VaultPanel({ internId }: { internId: string }) {
  return (
    <div className="stack">
      <h2>Vault</h2>
      <p className="hint">
        A command of the intern sees each secret as a placeholder; the egress proxy puts the value in only for requests to the
        secret's hosts. Values are write-only here.
      </p>
      <SecretScope title="This intern's secrets" internId={internId} />
      <SecretScope title="Workspace secrets" internId={null} copyInto={internId} />
    </div>
  );
}

function SecretScope({ title, internId, copyInto }: { title: string; internId: string | null; copyInto?: string }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const scope = scopePath(internId);
  const key = ['secrets', internId ?? 'workspace'];
  const secrets = useQuery({
    queryKey: key,
    queryFn: ({ signal }) => client.json<{ data: Secret[]; has_more: boolean }>(`${scope}?limit=100`, { signal }),
  });
  const [toDelete, setToDelete] = useState<string | null>(null);
  const remove = useMutation({
    mutationFn: (name: string) => client.json(`${scope}/${encodeURIComponent(name)}`, { method: 'DELETE' }),
    onSuccess: () => {
      setToDelete(null);
      void queryClient.invalidateQueries({ queryKey: key });
    },
  });
  const [selected, setSelected] = useState<string[]>([]);
  const copy = useMutation({
    mutationFn: () => client.json(`${path`/vault/interns/${copyInto ?? ''}/secrets`}/copy`, { json: { names: selected } }),
    onSuccess: () => {
      setSelected([]);
      void queryClient.invalidateQueries({ queryKey: ['secrets', copyInto] });
    },
  });
  const titleId = useId();
  const list = secrets.data?.data ?? [];

  return (
    <section className="card stack" aria-labelledby={titleId}>
      <h3 id={titleId}>{title}</h3>
      {secrets.isPending ? <Loading what="secrets" /> : null}
      <ErrorNote error={secrets.error} />
      {secrets.isSuccess && list.length === 0 ? <Empty>No secrets here yet: set one with the form below.</Empty> : null}
      {list.length > 0 ? (
        <TableScroll label={`${title}: list`}>
          <table>
            <thead>
              <tr>
                {copyInto === undefined ? null : <th scope="col">Copy</th>}
                <th scope="col">Name</th>
                <th scope="col">Hosts</th>
                <th scope="col">Fingerprint</th>
                <th scope="col">Set</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.map((secret) => (
                <tr key={secret.name}>
                  {copyInto === undefined ? null : (
                    <td>
                      <input
                        type="checkbox"
                        aria-label={`Select ${secret.name} to copy`}
                        checked={selected.includes(secret.name)}
                        onChange={(event) =>
                          setSelected(event.target.checked ? [...selected, secret.name] : selected.filter((name) => name !== secret.name))
                        }
                      />
                    </td>
                  )}
                  <th scope="row">
                    <code>{secret.name}</code>
                  </th>
                  <td>{secret.hosts === null ? 'any' : secret.hosts.join(', ')}</td>
                  <td>
                    <code className="fingerprint">{secret.fingerprint ?? '—'}</code>
                  </td>
                  <td>{formatTime(secret.created_at)}</td>
                  <td>
                    <button type="button" className="danger" onClick={() => setToDelete(secret.name)} aria-label={`Delete secret ${secret.name}`}>
                      Delete
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      ) : null}
      {copyInto === undefined || list.length === 0 ? null : (
        <div className="actions">
          <button type="button" disabled={selected.length === 0 || copy.isPending} onClick={() => copy.mutate()}>
            Copy selected into this intern's vault
          </button>
          {copy.isSuccess ? <span role="status" className="hint">Copied.</span> : null}
          <ErrorNote error={copy.error} />
        </div>
      )}
      <SetSecretForm scope={scope} onSaved={() => void queryClient.invalidateQueries({ queryKey: key })} />
      <ConfirmDialog
        open={toDelete !== null}
        title={`Delete secret ${toDelete ?? ''}?`}
        confirmLabel="Delete"
        busy={remove.isPending}
        onConfirm={() => toDelete !== null && remove.mutate(toDelete)}
        onCancel={() => setToDelete(null)}
      >
        <p>Commands of the intern lose it at once.</p>
        <ErrorNote error={remove.error} />
      </ConfirmDialog>
    </section>
  );
}

function SetSecretForm({ scope, onSaved }: { scope: string; onSaved(): void }) {
  const { client } = useSession();
  const id = useId();
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [hosts, setHosts] = useState('');
  const save = useMutation({
    mutationFn: () => client.json<{ data: Secret }>(`${scope}/${encodeURIComponent(name.trim())}`, { method: 'PUT', json: { value, hosts: listFromText(hosts) } }),
    onSuccess: () => {
      setName('');
      setHosts('');
      onSaved();
    },
    // The value leaves the page's state whatever the answer: it is never shown, and a retry means typing it again.
    onSettled: () => setValue(''),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  return (
    <form className="form-grid" onSubmit={submit} aria-label="Set a secret" autoComplete="off">
      <label htmlFor={`${id}-name`}>Name</label>
      <input
        id={`${id}-name`}
        required
        pattern="[a-z][a-z0-9]*(_[a-z0-9]+)*"
        maxLength={255}
        aria-describedby={`${id}-name-hint`}
        value={name}
        onChange={(event) => setName(event.target.value)}
      />
      <span id={`${id}-name-hint`} className="hint">
        Lowercase letters, digits and single underscores, e.g. github_token.
      </span>
      <label htmlFor={`${id}-value`}>Value (never shown again)</label>
      <input id={`${id}-value`} type="password" required maxLength={65536} autoComplete="new-password" value={value} onChange={(event) => setValue(event.target.value)} />
      <label htmlFor={`${id}-hosts`}>Hosts it is released to (one per line or comma separated)</label>
      <textarea id={`${id}-hosts`} required rows={2} value={hosts} onChange={(event) => setHosts(event.target.value)} />
      <ErrorNote error={save.error} />
      {save.isSuccess ? (
        <p role="status" className="hint">
          Saved {save.data.data.name}: fingerprint <code className="fingerprint">{save.data.data.fingerprint}</code>.
        </p>
      ) : null}
      <button type="submit" className="primary" disabled={save.isPending}>
        Set secret
      </button>
    </form>
  );
}
