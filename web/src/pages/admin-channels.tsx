// Admin: upstream embeddings channels — create, edit, enable/disable, test, delete; why one was disabled automatically.
import { useState } from 'preact/hooks';
import { call, del, post, put, query } from '../api';
import { fmtDate, fmtNumber } from '../format';
import { t } from '../i18n';
import { KeyPicker } from '../key-picker';
import { useRememberedKeys } from '../keys-memory';
import type { Channel } from '../types';
import { Badge, confirmAction, Dialog, Empty, ErrorNote, Field, Loading, Page, Pager, type Tone, toast, useAction, useAsync } from '../ui';

const PAGE_SIZE = 20;

function channelStatus(c: Channel): { tone: Tone; label: string } {
  if (c.status === 1) return { tone: 'ok', label: t('common.enabled') };
  if (c.status === 3) return { tone: 'bad', label: t('channels.autoDisabled') };
  return { tone: 'muted', label: t('common.disabled') };
}

export default function AdminChannelsPage() {
  const [page, setPage] = useState(0);
  const [keyword, setKeyword] = useState('');
  const [search, setSearch] = useState('');
  const list = useAsync(async () => {
    const res = await call<Channel[]>('GET', `${search ? '/api/channel/search' : '/api/channel/'}${query({ p: page, page_size: PAGE_SIZE, keyword: search })}`);
    return { rows: res.data, total: Number(res.headers.get('x-total-count') ?? res.data.length) };
  }, [page, search]);
  const [editing, setEditing] = useState<Channel | 'new' | null>(null);
  const [testing, setTesting] = useState<Channel | null>(null);
  const action = useAction();

  const toggle = (c: Channel) =>
    action.run(async () => {
      await put(`/api/channel/${c.id}`, { status: c.status === 1 ? 2 : 1 });
      list.reload();
    });
  const remove = async (c: Channel) => {
    if (!(await confirmAction({ title: t('channels.deleteTitle'), message: t('channels.deleteText', { name: c.name }), confirmLabel: t('common.delete') })))
      return;
    await action.run(async () => {
      await del(`/api/channel/${c.id}`);
      toast(t('channels.deleted', { name: c.name }));
      list.reload();
    });
  };

  return (
    <Page
      title={t('channels.title')}
      actions={
        <button type="button" class="primary" onClick={() => setEditing('new')}>
          {t('channels.create')}
        </button>
      }
    >
      <p class="muted">{t('channels.intro')}</p>
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault();
          setPage(0);
          setSearch(keyword.trim());
        }}
      >
        <Field label={t('channels.searchLabel')}>
          <input type="search" name="keyword" value={keyword} onInput={(e) => setKeyword(e.currentTarget.value)} />
        </Field>
        <button type="submit">{t('common.search')}</button>
      </form>
      <ErrorNote error={list.error} onRetry={list.reload} />
      <ErrorNote error={action.error} />
      {list.loading && !list.data ? (
        <Loading />
      ) : list.data?.rows.length === 0 ? (
        <Empty>{search ? t('common.noMatches') : t('channels.none')}</Empty>
      ) : (
        <div class="table-wrap">
          <table data-testid="channels-table">
            <thead>
              <tr>
                <th scope="col">{t('common.name')}</th>
                <th scope="col">{t('channels.models')}</th>
                <th scope="col">{t('common.status')}</th>
                <th scope="col" class="num">
                  {t('channels.priority')}
                </th>
                <th scope="col" class="num">
                  {t('channels.weight')}
                </th>
                <th scope="col" class="num">
                  {t('channels.price')}
                </th>
                <th scope="col" class="num">
                  {t('channels.used')}
                </th>
                <th scope="col">
                  <span class="sr-only">{t('common.actions')}</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.data?.rows.map((c) => {
                const st = channelStatus(c);
                return (
                  <tr key={c.id}>
                    <td>
                      <strong>{c.name}</strong>
                      <div class="muted small">
                        <code>{c.base_url}</code> · {c.key}
                      </div>
                    </td>
                    <td>{c.models.split(',').join(', ')}</td>
                    <td>
                      <Badge tone={st.tone}>{st.label}</Badge>
                      {c.status_reason && (
                        <div class="small text-bad" data-testid="status-reason">
                          {c.status_reason}
                        </div>
                      )}
                    </td>
                    <td class="num">{c.priority}</td>
                    <td class="num">{c.weight}</td>
                    <td class="num">{c.price === null ? <span class="muted">{t('channels.noPrice')}</span> : fmtNumber(c.price)}</td>
                    <td class="num">{fmtNumber(c.used_quota)}</td>
                    <td class="row-actions">
                      <button type="button" onClick={() => setTesting(c)}>
                        {t('channels.test')}
                      </button>
                      <button type="button" disabled={action.busy} onClick={() => void toggle(c)}>
                        {c.status === 1 ? t('common.disable') : t('common.enable')}
                      </button>
                      <button type="button" onClick={() => setEditing(c)}>
                        {t('common.edit')}
                      </button>
                      <button type="button" class="danger" onClick={() => void remove(c)}>
                        {t('common.delete')}
                      </button>
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {list.data && <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} onPage={setPage} />}
      <Dialog open={!!editing} title={editing === 'new' ? t('channels.create') : t('channels.edit')} onClose={() => setEditing(null)} wide>
        {editing && (
          <ChannelForm
            channel={editing === 'new' ? undefined : editing}
            onDone={() => {
              setEditing(null);
              toast(t('common.saved'));
              list.reload();
            }}
            onCancel={() => setEditing(null)}
          />
        )}
      </Dialog>
      <Dialog open={!!testing} title={t('channels.testTitle', { name: testing?.name ?? '' })} onClose={() => setTesting(null)}>
        {testing && <ChannelTest channel={testing} onTested={list.reload} />}
      </Dialog>
    </Page>
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
  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
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
    });
  };
  return (
    <form class="form" onSubmit={submit}>
      <ErrorNote error={action.error} />
      <Field label={t('common.name')}>
        <input name="name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </Field>
      <Field label={t('channels.baseUrl')} hint={t('channels.baseUrlHint')}>
        <input name="base_url" type="url" value={baseUrl} onInput={(e) => setBaseUrl(e.currentTarget.value)} />
      </Field>
      <Field label={t('channels.key')} hint={c ? t('channels.keyKeep', { hint: c.key }) : t('channels.keyHint')}>
        <input name="key" type="password" autocomplete="off" required={!c} value={key} onInput={(e) => setKey(e.currentTarget.value)} />
      </Field>
      <Field label={t('channels.models')} hint={t('channels.modelsHint')}>
        <input name="models" required value={models} placeholder="text-embedding-3-small" onInput={(e) => setModels(e.currentTarget.value)} />
      </Field>
      <Field label={t('channels.mapping')} hint={t('channels.mappingHint')}>
        <textarea name="model_mapping" rows={3} spellcheck={false} value={mapping} onInput={(e) => setMapping(e.currentTarget.value)} />
      </Field>
      <div class="inline-form">
        <Field label={t('channels.priority')}>
          <input name="priority" type="number" step={1} value={priority} onInput={(e) => setPriority(e.currentTarget.value)} />
        </Field>
        <Field label={t('channels.weight')}>
          <input name="weight" type="number" min={0} step={1} value={weight} onInput={(e) => setWeight(e.currentTarget.value)} />
        </Field>
        <Field label={t('channels.price')} hint={t('channels.priceHint')}>
          <input name="price" type="number" min={0} step="any" value={price} onInput={(e) => setPrice(e.currentTarget.value)} />
        </Field>
      </div>
      <label class="check">
        <input type="checkbox" name="enabled" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
        {t('channels.enabledLabel')}
      </label>
      <div class="form-actions">
        <button type="button" onClick={props.onCancel}>
          {t('common.cancel')}
        </button>
        <button type="submit" class="primary" disabled={action.busy}>
          {c ? t('common.save') : t('channels.create')}
        </button>
      </div>
    </form>
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
  return (
    <form
      class="form"
      onSubmit={(e) => {
        e.preventDefault();
        setOutcome(null);
        void (async () => {
          await action.run(async () => {
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
          });
          // A failed test may have disabled the channel (its reason shows in the list).
          props.onTested();
        })();
      }}
    >
      <p class="hint">{t('channels.testHint')}</p>
      <KeyPicker value={key} onChange={setKey} purpose="channel-test" />
      <Field label={t('common.model')}>
        <select name="model" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
          {modelList.map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
      </Field>
      <ErrorNote error={action.error} />
      {outcome && (
        <p class="note ok" role="status">
          {t('channels.testOk', { ms: Math.round(outcome.ms), dims: outcome.dims, tokens: outcome.tokens })}
        </p>
      )}
      <p class="muted small">
        {t('channels.updated')} {fmtDate(props.channel.updated_time)}
      </p>
      <div class="form-actions">
        <button type="submit" class="primary" disabled={action.busy || !key || !model}>
          {action.busy ? t('channels.testing') : t('channels.test')}
        </button>
      </div>
    </form>
  );
}
