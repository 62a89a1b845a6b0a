// Webhooks: endpoints told (Standard Webhooks) when your jobs end — list with why one was disabled, create (the secret
// shown once), rotate the secret (shown once), enable and disable, delete; an endpoint's delivery log and redelivery.
import { useState } from 'preact/hooks';
import { call, del, post } from '../api';
import { DataTable, LoadedTable, RowButtons } from '../data-table';
import { ActionForm, CheckField, InputField } from '../form';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { useListChanges } from '../paged-list';
import type { WebhookDelivery, WebhookEndpoint, WebhookWithSecret } from '../types';
import { askDelete, Badge, CopyButton, DialogFor, ErrorNote, Page, toast, useAction, useAsync } from '../ui';

const EVENT_TYPES = ['job.completed', 'job.failed', 'job.cancelled', 'batch.completed', 'batch.failed', 'batch.expired', 'batch.cancelled'];

export default function WebhooksPage() {
  const endpoints = useAsync(async () => (await call<WebhookEndpoint[]>('GET', '/api/webhooks')).data, []);
  const [creating, setCreating] = useState(false);
  const [secret, setSecret] = useState<WebhookWithSecret | null>(null);
  const [log, setLog] = useState<WebhookEndpoint | null>(null);
  const { action, change, changeIfConfirmed } = useListChanges(endpoints);
  const toggle = (e: WebhookEndpoint) => change(() => call('PATCH', `/api/webhooks/${e.id}`, { enabled: !e.enabled }));
  const remove = (e: WebhookEndpoint) =>
    changeIfConfirmed(askDelete(t('hooks.deleteTitle'), t('hooks.deleteText', { url: e.url })), async () => {
      await del(`/api/webhooks/${e.id}`);
      toast(t('hooks.deleted'));
    });
  const rotate = (e: WebhookEndpoint) =>
    change(async () => {
      setSecret(await post<WebhookWithSecret>(`/api/webhooks/${e.id}/rotate-secret`));
    });
  return (
    <Page
      title={t('hooks.title')}
      actions={
        <button type="button" class="primary" onClick={() => setCreating(true)}>
          {t('hooks.create')}
        </button>
      }
    >
      <p class="muted">{t('hooks.intro')}</p>
      <ErrorNote error={endpoints.error} onRetry={endpoints.reload} />
      <ErrorNote error={action.error} />
      <LoadedTable
        loading={endpoints.loading}
        rows={endpoints.data}
        empty={t('hooks.none')}
        testId="webhooks-table"
        rowKey={(e) => e.id}
        columns={[
          { head: 'URL', cell: (e) => <code>{e.url}</code> },
          { head: t('hooks.events'), cell: (e) => e.event_types.join(', ') },
          { head: t('hooks.description'), cell: (e) => e.description || '—' },
          {
            head: t('common.status'),
            cell: (e) =>
              e.enabled ? (
                <Badge tone={e.failing_since ? 'warn' : 'ok'} title={e.failing_since ? t('hooks.failingSince', { at: fmtDate(e.failing_since) }) : undefined}>
                  {e.failing_since ? t('hooks.failing') : t('common.enabled')}
                </Badge>
              ) : (
                <Badge tone={e.disabled_reason ? 'bad' : 'muted'} title={e.disabled_reason ?? undefined}>
                  {e.disabled_reason ? t('hooks.disabledBecause', { reason: e.disabled_reason }) : t('common.disabled')}
                </Badge>
              ),
          },
        ]}
        actions={(e) => (
          <RowButtons enabled={e.enabled} busy={action.busy} onToggle={() => void toggle(e)} onDelete={() => void remove(e)}>
            <button type="button" onClick={() => setLog(e)}>
              {t('hooks.deliveries')}
            </button>
            <button type="button" disabled={action.busy} onClick={() => void rotate(e)}>
              {t('hooks.rotate')}
            </button>
          </RowButtons>
        )}
      />
      <DialogFor value={creating} title={() => t('hooks.create')} onClose={() => setCreating(false)}>
        {() => (
          <CreateWebhook
            onDone={(made) => {
              setCreating(false);
              setSecret(made);
              endpoints.reload();
            }}
            onCancel={() => setCreating(false)}
          />
        )}
      </DialogFor>
      <DialogFor value={secret} title={() => t('hooks.secretTitle')} onClose={() => setSecret(null)}>
        {(made) => (
          <div class="key-shown">
            <p class="note warn">{t('hooks.secretOnce')}</p>
            <code class="secret" data-testid="webhook-secret">
              {made.secret}
            </code>
            <div class="form-actions">
              <CopyButton text={made.secret} class="primary" />
              <button type="button" onClick={() => setSecret(null)}>
                {t('common.done')}
              </button>
            </div>
          </div>
        )}
      </DialogFor>
      <DialogFor value={log} title={(e) => t('hooks.deliveriesOf', { url: e.url })} onClose={() => setLog(null)} wide>
        {(e) => <Deliveries endpoint={e} />}
      </DialogFor>
    </Page>
  );
}

function CreateWebhook(props: { onDone: (made: WebhookWithSecret) => void; onCancel: () => void }) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [types, setTypes] = useState<string[]>([...EVENT_TYPES]);
  const action = useAction();
  const submit = async () =>
    props.onDone(await post<WebhookWithSecret>('/api/webhooks', { url: url.trim(), description: description.trim(), event_types: types }));
  return (
    <ActionForm action={action} onSubmit={submit} onCancel={props.onCancel} submitLabel={t('hooks.create')} blocked={types.length === 0}>
      <InputField label="URL" name="url" type="url" required maxLength={2000} placeholder="https://" value={url} onValue={setUrl} />
      <InputField label={t('hooks.description')} name="description" maxLength={200} value={description} onValue={setDescription} />
      <fieldset>
        <legend>{t('hooks.events')}</legend>
        {EVENT_TYPES.map((type) => (
          <CheckField
            key={type}
            name={type}
            checked={types.includes(type)}
            onChecked={(on) => setTypes(on ? [...types, type] : types.filter((x) => x !== type))}
          >
            <code>{type}</code>
          </CheckField>
        ))}
      </fieldset>
    </ActionForm>
  );
}

function Deliveries(props: { endpoint: WebhookEndpoint }) {
  const rows = useAsync(async () => (await call<WebhookDelivery[]>('GET', `/api/webhooks/${props.endpoint.id}/deliveries?limit=50`)).data, [props.endpoint.id]);
  const action = useAction();
  const redeliver = (d: WebhookDelivery) =>
    action.run(async () => {
      await post(`/api/webhooks/${props.endpoint.id}/deliveries/${d.id}/redeliver`);
      toast(t('hooks.redelivering'));
      setTimeout(rows.reload, 1_000);
    });
  return (
    <>
      <ErrorNote error={rows.error} onRetry={rows.reload} />
      <ErrorNote error={action.error} />
      {rows.data && rows.data.length === 0 ? <p class="muted">{t('hooks.noDeliveries')}</p> : null}
      <DataTable
        rows={rows.data ?? []}
        testId="webhook-deliveries"
        rowKey={(d) => d.id}
        columns={[
          { head: t('hooks.time'), cell: (d) => fmtDate(d.created_at) },
          { head: t('hooks.event'), cell: (d) => <code title={d.event_id}>{d.event_type}</code> },
          { head: t('hooks.attempt'), cell: (d) => d.attempt },
          {
            head: t('common.status'),
            cell: (d) => <Badge tone={d.ok ? 'ok' : 'bad'}>{d.status_code ?? d.error ?? '—'}</Badge>,
          },
          { head: t('hooks.duration'), cell: (d) => `${d.duration_ms} ms` },
          { head: t('hooks.answer'), cell: (d) => <code class="excerpt">{d.response_excerpt ?? d.error ?? ''}</code> },
        ]}
        actions={(d) => (
          <button type="button" disabled={action.busy} onClick={() => void redeliver(d)}>
            {t('hooks.redeliver')}
          </button>
        )}
      />
    </>
  );
}
