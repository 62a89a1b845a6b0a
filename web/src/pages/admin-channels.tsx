// Admin: upstream embeddings channels — create, edit, enable/disable, test, delete; why one was disabled automatically.
import { useState } from 'preact/hooks';
import { call, del, post, put } from '../api';
import { RowButtons } from '../data-table';
import { ActionForm, CheckField, InputField, SelectField, TextAreaField } from '../form';
import { fmtDate, fmtNumber } from '../format';
import { t } from '../i18n';
import { KeyPicker } from '../key-picker';
import { useRememberedKeys } from '../keys-memory';
import { SearchListPage, useSearchList } from '../paged-list';
import type { Channel } from '../types';
import { askDelete, DialogFor, StatusBadge, type Tone, toast, useAction } from '../ui';

function channelStatus(c: Channel): { tone: Tone; label: string } {
  if (c.status === 1) return { tone: 'ok', label: t('common.enabled') };
  if (c.status === 3) return { tone: 'bad', label: t('channels.autoDisabled') };
  return { tone: 'muted', label: t('common.disabled') };
}

export default function AdminChannelsPage() {
  const state = useSearchList<Channel>('/api/channel/');
  const [editing, setEditing] = useState<Channel | 'new' | null>(null);
  const [testing, setTesting] = useState<Channel | null>(null);

  const toggle = (c: Channel) => state.change(() => put(`/api/channel/${c.id}`, { status: c.status === 1 ? 2 : 1 }));
  const remove = (c: Channel) =>
    state.changeIfConfirmed(askDelete(t('channels.deleteTitle'), t('channels.deleteText', { name: c.name })), async () => {
      await del(`/api/channel/${c.id}`);
      toast(t('channels.deleted', { name: c.name }));
    });

  return (
    <SearchListPage
      title={t('channels.title')}
      createLabel={t('channels.create')}
      onCreate={() => setEditing('new')}
      intro={t('channels.intro')}
      state={state}
      searchLabel={t('channels.searchLabel')}
      none={t('channels.none')}
      testId="channels-table"
      rowKey={(c) => c.id}
      columns={[
        {
          head: t('common.name'),
          cell: (c) => (
            <>
              <strong>{c.name}</strong>
              <div class="muted small">
                <code>{c.base_url}</code> · {c.key}
              </div>
            </>
          ),
        },
        { head: t('channels.models'), cell: (c) => c.models.split(',').join(', ') },
        {
          head: t('common.status'),
          cell: (c) => (
            <>
              <StatusBadge {...channelStatus(c)} />
              {c.status_reason && (
                <div class="small text-bad" data-testid="status-reason">
                  {c.status_reason}
                </div>
              )}
            </>
          ),
        },
        { head: t('channels.priority'), num: true, cell: (c) => c.priority },
        { head: t('channels.weight'), num: true, cell: (c) => c.weight },
        {
          head: t('channels.price'),
          num: true,
          cell: (c) => (c.price === null ? <span class="muted">{t('channels.noPrice')}</span> : fmtNumber(c.price)),
        },
        { head: t('channels.used'), num: true, cell: (c) => fmtNumber(c.used_quota) },
      ]}
      actions={(c) => (
        <RowButtons
          enabled={c.status === 1}
          busy={state.action.busy}
          onToggle={() => void toggle(c)}
          onEdit={() => setEditing(c)}
          onDelete={() => void remove(c)}
        >
          <button type="button" onClick={() => setTesting(c)}>
            {t('channels.test')}
          </button>
        </RowButtons>
      )}
    >
      <DialogFor value={editing} title={(c) => (c === 'new' ? t('channels.create') : t('channels.edit'))} onClose={() => setEditing(null)} wide>
        {(c) => (
          <ChannelForm
            channel={c === 'new' ? undefined : c}
            onDone={() => {
              setEditing(null);
              toast(t('common.saved'));
              state.list.reload();
            }}
            onCancel={() => setEditing(null)}
          />
        )}
      </DialogFor>
      <DialogFor value={testing} title={(c) => t('channels.testTitle', { name: c.name })} onClose={() => setTesting(null)}>
        {(c) => <ChannelTest channel={c} onTested={state.list.reload} />}
      </DialogFor>
    </SearchListPage>
  );
}

function ChannelForm(props: { channel?: Channel; onDone: () => void; onCancel: () => void }) {
  const c = props.channel;
  const [name, setName] = useState(c?.name ?? '');
  const [baseUrl, setBaseUrl] = useState(c?.base_url ?? 'https://api.openai.com');
  const [key, setKey] = useState('');
  const [models, setModels] = useState(c?.models ?? '');
  const [mapping, setMapping] = useState(c && Object.keys(c.model_mapping).length ? JSON.stringify(c.model_mapping, null, 2) : '');
  const [priority, setPriority] = useState(String(c?.priority ?? 0));
  const [weight, setWeight] = useState(String(c?.weight ?? 1));
  const [price, setPrice] = useState(c?.price === null || c?.price === undefined ? '' : String(c.price));
  const [enabled, setEnabled] = useState(c ? c.status === 1 : true);
  const action = useAction();
  const submit = async () => {
    const body: Record<string, unknown> = {
      name: name.trim(),
      base_url: baseUrl.trim(),
      models: models.trim(),
      model_mapping: mapping.trim() || '{}',
      priority: Number(priority) || 0,
      weight: Number(weight) || 0,
      price: price.trim() === '' ? null : Number(price),
      status: enabled ? 1 : 2,
    };
    if (key.trim() || !c) body.key = key.trim();
    if (c) await put(`/api/channel/${c.id}`, body);
    else await post('/api/channel/', body);
    props.onDone();
  };
  return (
    <ActionForm action={action} onSubmit={submit} onCancel={props.onCancel} submitLabel={c ? t('common.save') : t('channels.create')}>
      <InputField label={t('common.name')} name="name" required maxLength={100} value={name} onValue={setName} />
      <InputField label={t('channels.baseUrl')} hint={t('channels.baseUrlHint')} name="base_url" type="url" value={baseUrl} onValue={setBaseUrl} />
      <InputField
        label={t('channels.key')}
        hint={c ? t('channels.keyKeep', { hint: c.key }) : t('channels.keyHint')}
        name="key"
        type="password"
        autocomplete="off"
        required={!c}
        value={key}
        onValue={setKey}
      />
      <InputField
        label={t('channels.models')}
        hint={t('channels.modelsHint')}
        name="models"
        required
        placeholder="text-embedding-3-small"
        value={models}
        onValue={setModels}
      />
      <TextAreaField
        label={t('channels.mapping')}
        hint={t('channels.mappingHint')}
        name="model_mapping"
        rows={3}
        spellcheck={false}
        value={mapping}
        onValue={setMapping}
      />
      <div class="inline-form">
        <InputField label={t('channels.priority')} name="priority" type="number" step={1} value={priority} onValue={setPriority} />
        <InputField label={t('channels.weight')} name="weight" type="number" min={0} step={1} value={weight} onValue={setWeight} />
        <InputField label={t('channels.price')} hint={t('channels.priceHint')} name="price" type="number" min={0} step="any" value={price} onValue={setPrice} />
      </div>
      <CheckField name="enabled" checked={enabled} onChecked={setEnabled}>
        {t('channels.enabledLabel')}
      </CheckField>
    </ActionForm>
  );
}

/**
 * One embeddings call for a model of this channel, through the gateway with one of your keys. The
 * gateway chooses among the channels serving that model, so with several it may answer from another.
 */
function ChannelTest(props: { channel: Channel; onTested: () => void }) {
  const remembered = useRememberedKeys();
  const modelList = props.channel.models.split(',').filter(Boolean);
  const [key, setKey] = useState(remembered[0]?.key ?? '');
  const [model, setModel] = useState(modelList[0] ?? '');
  const [outcome, setOutcome] = useState<{ ms: number; dims: number; tokens: number } | null>(null);
  const action = useAction();
  const test = async () => {
    setOutcome(null);
    try {
      const started = performance.now();
      const res = (
        await call<{ data: { embedding: number[] }[]; usage: { prompt_tokens: number } }>(
          'POST',
          '/v1/embeddings',
          { model, input: 'Switchyard channel test' },
          { headers: { authorization: `Bearer ${key}` } },
        )
      ).data;
      setOutcome({ ms: performance.now() - started, dims: res.data[0]?.embedding.length ?? 0, tokens: res.usage.prompt_tokens });
    } finally {
      // A failed test may have disabled the channel (its reason shows in the list).
      props.onTested();
    }
  };
  return (
    <ActionForm
      action={action}
      onSubmit={test}
      blocked={!key || !model}
      submitLabel={action.busy ? t('channels.testing') : t('channels.test')}
      head={
        <>
          <p class="hint">{t('channels.testHint')}</p>
          <KeyPicker value={key} onChange={setKey} purpose="channel-test" />
          <SelectField label={t('common.model')} name="model" value={model} onValue={setModel} choices={modelList.map((m) => ({ value: m, label: m }))} />
        </>
      }
    >
      {outcome && (
        <p class="note ok" role="status">
          {t('channels.testOk', { ms: Math.round(outcome.ms), dims: outcome.dims, tokens: outcome.tokens })}
        </p>
      )}
      <p class="muted small">
        {t('channels.updated')} {fmtDate(props.channel.updated_time)}
      </p>
    </ActionForm>
  );
}
