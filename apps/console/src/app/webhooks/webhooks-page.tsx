import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { path } from '../api/client';
import { WEBHOOK_EVENT_TYPES, type Delivery, type Webhook, type WebhookEventType } from '../api/types';
import { useSession } from '../session';
import { ConfirmDialog } from '../ui/confirm-dialog';
import { Empty, ErrorNote, Loading, TableScroll } from '../ui/feedback';
import { formatTime } from '../ui/format';
import { StatusBadge } from '../ui/status-badge';
import { useTitle } from '../ui/use-title';

const WEBHOOKS_KEY = ['webhooks'];

/** The workspace's webhook endpoints (interface section 13) and their deliveries. URLs are shown as text, never links. */
export function WebhooksPage() {
  useTitle('Webhooks');
  const { client } = useSession();
  const webhooks = useQuery({ queryKey: WEBHOOKS_KEY, queryFn: ({ signal }) => client.json<{ data: Webhook[] }>('/webhooks', { signal }) });
  const [shown, setShown] = useState<string | null>(null);
  const list = webhooks.data?.data ?? [];
  return (
    <div className="page stack">
      <h1>Webhooks</h1>
      <CreateWebhookForm />
      <section className="stack" aria-labelledby="endpoints-title">
        <h2 id="endpoints-title">Endpoints</h2>
        {webhooks.isPending ? <Loading what="webhooks" /> : null}
        <ErrorNote error={webhooks.error} />
        {webhooks.isSuccess && list.length === 0 ? <Empty>No endpoints yet: add one with the form above to receive the workspace's events.</Empty> : null}
        <ul className="webhook-list">
          {list.map((webhook) => (
            <li key={webhook.id} className="card stack">
              <WebhookView webhook={webhook} showDeliveries={shown === webhook.id} onToggle={() => setShown(shown === webhook.id ? null : webhook.id)} />
            </li>
          ))}
        </ul>
      </section>
    </div>
  );
}

function CreateWebhookForm() {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const id = useId();
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<WebhookEventType[]>([...WEBHOOK_EVENT_TYPES]);
  const create = useMutation({
    mutationFn: () =>
      client.json<Webhook>('/webhooks', { json: { url: url.trim(), events, ...(description.trim() === '' ? {} : { description: description.trim() }) } }),
    onSuccess: () => {
      setUrl('');
      setDescription('');
      void queryClient.invalidateQueries({ queryKey: WEBHOOKS_KEY });
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <form className="card form-grid" onSubmit={submit} aria-labelledby={`${id}-title`}>
      <h2 id={`${id}-title`}>New endpoint</h2>
      <label htmlFor={`${id}-url`}>URL (https)</label>
      <input id={`${id}-url`} type="url" required placeholder="https://example.com/hooks/interns" value={url} onChange={(event) => setUrl(event.target.value)} />
      <label htmlFor={`${id}-description`}>Description (optional)</label>
      <input id={`${id}-description`} value={description} onChange={(event) => setDescription(event.target.value)} />
      <fieldset>
        <legend>Events</legend>
        {WEBHOOK_EVENT_TYPES.map((type) => (
          <label key={type} className="checkbox">
            <input
              type="checkbox"
              checked={events.includes(type)}
              onChange={(event) => setEvents(event.target.checked ? [...events, type] : events.filter((each) => each !== type))}
            />
            {type}
          </label>
        ))}
      </fieldset>
      <ErrorNote error={create.error} />
      {create.data?.secret === undefined ? null : (
        <div role="status" className="secret-once">
          <p>Endpoint created. Its signing secret, shown this once (keep it where your receiver verifies signatures):</p>
          <code className="fingerprint">{create.data.secret}</code>
        </div>
      )}
      <button type="submit" className="primary" disabled={create.isPending || events.length === 0}>
        Add endpoint
      </button>
    </form>
  );
}

function WebhookView({ webhook, showDeliveries, onToggle }: { webhook: Webhook; showDeliveries: boolean; onToggle(): void }) {
  const { client } = useSession();
  const queryClient = useQueryClient();
  const [confirming, setConfirming] = useState(false);
  const remove = useMutation({
    mutationFn: () => client.json(path`/webhooks/${webhook.id}`, { method: 'DELETE' }),
    onSuccess: () => {
      setConfirming(false);
      void queryClient.invalidateQueries({ queryKey: WEBHOOKS_KEY });
    },
  });
  return (
    <>
      <h3 className="url">{webhook.url}</h3>
      {webhook.description === null ? null : <p>{webhook.description}</p>}
      <p className="meta">
        {webhook.events.join(', ')} · created {formatTime(webhook.created_at)}
      </p>
      <div className="actions">
        <button type="button" onClick={onToggle} aria-expanded={showDeliveries}>
          {showDeliveries ? 'Hide deliveries' : 'Show deliveries'}
        </button>
        <button type="button" className="danger" onClick={() => setConfirming(true)}>
          Delete endpoint
        </button>
      </div>
      {showDeliveries ? <Deliveries webhookId={webhook.id} /> : null}
      <ConfirmDialog
        open={confirming}
        title="Delete this endpoint?"
        confirmLabel="Delete"
        busy={remove.isPending}
        onConfirm={() => remove.mutate()}
        onCancel={() => setConfirming(false)}
      >
        <p className="url">{webhook.url}</p>
        <p>It receives no further events.</p>
        <ErrorNote error={remove.error} />
      </ConfirmDialog>
    </>
  );
}

function Deliveries({ webhookId }: { webhookId: string }) {
  const { client } = useSession();
  const deliveries = useQuery({
    queryKey: ['deliveries', webhookId],
    queryFn: ({ signal }) => client.json<{ data: Delivery[] }>(path`/webhooks/${webhookId}/deliveries`, { signal }),
  });
  const list = deliveries.data?.data ?? [];
  return (
    <div className="stack">
      {deliveries.isPending ? <Loading what="deliveries" /> : null}
      <ErrorNote error={deliveries.error} />
      {deliveries.isSuccess && list.length === 0 ? <Empty>No deliveries yet: they appear as the workspace's events happen.</Empty> : null}
      {list.length > 0 ? (
        <TableScroll label="Delivery list">
          <table>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last answer</th>
                <th scope="col">Created</th>
                <th scope="col">Delivered</th>
              </tr>
            </thead>
            <tbody>
              {list.map((delivery) => (
                <tr key={delivery.id}>
                  <td>{delivery.event_type}</td>
                  <td>
                    <StatusBadge status={delivery.status} />
                  </td>
                  <td>{delivery.attempts}</td>
                  <td>{delivery.last_error ?? delivery.last_status_code ?? '—'}</td>
                  <td>{formatTime(delivery.created_at)}</td>
                  <td>{formatTime(delivery.delivered_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      ) : null}
    </div>
  );
}
