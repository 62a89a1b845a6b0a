// Admin: upstream embeddings channels — create (a type from the registered providers, with the settings that type
// takes), edit, enable/disable, test directly (one channel, or all of them), delete; why one was disabled automatically.
import { useState } from 'preact/hooks';
import { ApiError, call, del, errorText, get, post, put } from '../api';
import { RowButtons } from '../data-table';
import { ActionForm, CheckField, InputField, SelectField, TextAreaField } from '../form';
import { fmtDate, fmtNumber } from '../format';
import { t, useLang } from '../i18n';
import { zhCNProviders } from '../messages/zh-cn-providers';
import { SearchListView, useSearchList } from '../paged-list';
import type { Channel, ChannelType } from '../types';
import { askDelete, DialogFor, ErrorNote, Page, StatusBadge, type Tone, toast, useAction, useAsync } from '../ui';

type ConfigField = ChannelType['config_fields'][number];

function channelStatus(c: Channel): { tone: Tone; label: string } {
  if (c.status === 1) return { tone: 'ok', label: t('common.enabled') };
  if (c.status === 3) return { tone: 'bad', label: t('channels.autoDisabled') };
  return { tone: 'muted', label: t('common.disabled') };
}

/**
 * A provider's words in the reader's language: the server's (English) label, or its Chinese translation by type and
 * setting name (messages/zh-cn.ts) where there is one.
 */
const inLang = (lang: string, key: string, english: string) => (lang === 'zh-CN' ? (zhCNProviders[key] ?? english) : english);
const typeLabel = (lang: string, type: ChannelType | undefined, name: string) => (type ? inLang(lang, type.type, type.label) : name);

/** A direct test's outcome in words: one-api's answer is success false (HTTP 200) when the channel failed. */
async function runTest(c: Channel): Promise<void> {
  try {
    await call('GET', `/api/channel/test/${c.id}`);
    toast(t('channels.testOk', { name: c.name }));
  } catch (err) {
    const failed = err instanceof ApiError && err.status === 200;
    toast(failed ? t('channels.testFailed', { name: c.name, message: err.detail }) : errorText(err), 'error');
  }
}

export default function AdminChannelsPage() {
  const lang = useLang();
  const state = useSearchList<Channel>('/api/channel/');
  const types = useAsync(() => get<ChannelType[]>('/api/channel/types'), []);
  const [editing, setEditing] = useState<Channel | 'new' | null>(null);
  const [testing, setTesting] = useState<Set<number>>(new Set());
  const testAll = useAction();
  const typeOf = (name: string) => types.data?.find((x) => x.type === name);

  const toggle = (c: Channel) => state.change(() => put(`/api/channel/${c.id}`, { status: c.status === 1 ? 2 : 1 }));
  const remove = (c: Channel) =>
    state.changeIfConfirmed(askDelete(t('channels.deleteTitle'), t('channels.deleteText', { name: c.name })), async () => {
      await del(`/api/channel/${c.id}`);
      toast(t('channels.deleted', { name: c.name }));
    });
  const test = async (c: Channel) => {
    setTesting((s) => new Set(s).add(c.id));
    try {
      await runTest(c);
    } finally {
      setTesting((s) => {
        const next = new Set(s);
        next.delete(c.id);
        return next;
      });
      // A test records its time, and a refused key disables the channel (its reason shows in the list).
      state.list.reload();
    }
  };
  const runAll = () =>
    testAll.run(async () => {
      try {
        const r = (await call<{ tested: number; succeeded: number; failed: number }>('GET', '/api/channel/test')).data;
        toast(t('channels.testedAll', { tested: r.tested, succeeded: r.succeeded, failed: r.failed }), r.failed ? 'error' : 'ok');
      } finally {
        state.list.reload();
      }
    });

  return (
    <Page
      title={t('channels.title')}
      actions={
        <>
          <button type="button" disabled={testAll.busy} onClick={() => void runAll()}>
            {testAll.busy ? t('channels.testingAll') : t('channels.testAll')}
          </button>
          <button type="button" class="primary" onClick={() => setEditing('new')}>
            {t('channels.create')}
          </button>
        </>
      }
    >
      <p class="muted">{t('channels.intro')}</p>
      <ErrorNote error={testAll.error} />
      <SearchListView
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
                  <span data-testid="channel-type">{typeLabel(lang, typeOf(c.type), c.type)}</span> · <code>{c.base_url}</code> · {c.key}
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
          {
            head: t('channels.responseTime'),
            num: true,
            cell: (c) =>
              c.response_time === null ? (
                <span class="muted">—</span>
              ) : (
                <span data-testid="response-time">{t('channels.ms', { ms: fmtNumber(c.response_time) })}</span>
              ),
          },
          {
            head: t('channels.testTime'),
            cell: (c) =>
              c.test_time === null ? <span class="muted">{t('channels.never')}</span> : <span data-testid="test-time">{fmtDate(c.test_time)}</span>,
          },
        ]}
        actions={(c) => (
          <RowButtons
            enabled={c.status === 1}
            busy={state.action.busy}
            onToggle={() => void toggle(c)}
            onEdit={() => setEditing(c)}
            onDelete={() => void remove(c)}
          >
            <button type="button" disabled={testing.has(c.id)} onClick={() => void test(c)}>
              {testing.has(c.id) ? t('channels.testing') : t('channels.test')}
            </button>
          </RowButtons>
        )}
      />
      <DialogFor value={editing} title={(c) => (c === 'new' ? t('channels.create') : t('channels.edit'))} onClose={() => setEditing(null)} wide>
        {(c) => (
          <ChannelForm
            channel={c === 'new' ? undefined : c}
            types={types.data ?? []}
            onDone={() => {
              setEditing(null);
              toast(t('common.saved'));
              state.list.reload();
            }}
            onCancel={() => setEditing(null)}
          />
        )}
      </DialogFor>
    </Page>
  );
}

/** A setting's value as the form holds it: text (a number or JSON written out), or '', 'true', 'false' for a yes/no. */
function fieldText(f: ConfigField, v: unknown): string {
  if (v === undefined || v === null) return '';
  if (f.kind === 'json') return JSON.stringify(v, null, 2);
  return String(v);
}

/** The form's value of a setting as `config` takes it; undefined when left empty (the provider's default). */
function fieldValue(f: ConfigField, text: string, label: string): unknown {
  const v = text.trim();
  if (v === '') return undefined;
  if (f.kind === 'boolean') return v === 'true';
  if (f.kind === 'number') return Number(v);
  if (f.kind === 'json') {
    try {
      return JSON.parse(v);
    } catch {
      throw new ApiError(400, t('channels.configNotJson', { field: label }));
    }
  }
  return v;
}

/** One setting of a type's `config`: a menu for one of a few values or a yes/no, a text area for JSON, else a text or number field. */
function ConfigInput(props: { field: ConfigField; label: string; value: string; onValue: (v: string) => void }) {
  const { field: f, label, value, onValue } = props;
  const name = `config.${f.name}`;
  const hint = f.required ? undefined : t('channels.configOptional');
  if (f.kind === 'boolean' || f.choices) {
    const choices =
      f.kind === 'boolean'
        ? [
            { value: 'true', label: t('channels.yes') },
            { value: 'false', label: t('channels.no') },
          ]
        : f.choices!.map((c) => ({ value: c, label: c }));
    return (
      <SelectField
        label={label}
        hint={hint}
        name={name}
        value={value}
        onValue={onValue}
        choices={[{ value: '', label: t('channels.providerDefault') }, ...choices]}
      />
    );
  }
  if (f.kind === 'json')
    return (
      <TextAreaField
        label={label}
        hint={hint}
        name={name}
        rows={3}
        spellcheck={false}
        placeholder={f.placeholder ?? undefined}
        value={value}
        onValue={onValue}
      />
    );
  return (
    <InputField
      label={label}
      hint={hint}
      name={name}
      type={f.kind === 'number' ? 'number' : 'text'}
      step={f.kind === 'number' ? 'any' : undefined}
      required={f.required}
      placeholder={f.placeholder ?? undefined}
      value={value}
      onValue={onValue}
    />
  );
}

function ChannelForm(props: { channel?: Channel; types: ChannelType[]; onDone: () => void; onCancel: () => void }) {
  const c = props.channel;
  const lang = useLang();
  const [type, setType] = useState(c?.type ?? 'openai');
  const [name, setName] = useState(c?.name ?? '');
  const [baseUrl, setBaseUrl] = useState(c?.base_url ?? '');
  const [key, setKey] = useState('');
  const [models, setModels] = useState(c?.models ?? '');
  const [mapping, setMapping] = useState(c && Object.keys(c.model_mapping).length ? JSON.stringify(c.model_mapping, null, 2) : '');
  const [priority, setPriority] = useState(String(c?.priority ?? 0));
  const [weight, setWeight] = useState(String(c?.weight ?? 1));
  const [group, setGroup] = useState(c?.group ?? 'default');
  const [price, setPrice] = useState(c?.price === null || c?.price === undefined ? '' : String(c.price));
  const [enabled, setEnabled] = useState(c ? c.status === 1 : true);
  // The settings' texts by name, kept across a change of type (only the chosen type's are sent).
  const [settings, setSettings] = useState<Record<string, string>>(() => {
    const fields = props.types.find((x) => x.type === c?.type)?.config_fields ?? [];
    return Object.fromEntries(fields.map((f) => [f.name, fieldText(f, c?.config[f.name])]));
  });
  const provider = props.types.find((x) => x.type === type);
  const fields = provider?.config_fields ?? [];
  const fieldLabel = (f: ConfigField) => inLang(lang, `${type}.${f.name}`, f.label);
  const action = useAction();
  const submit = async () => {
    // Settings the form does not show (set through the API) are kept while the type stays.
    const config: Record<string, unknown> = c && c.type === type ? { ...c.config } : {};
    for (const f of fields) {
      const v = fieldValue(f, settings[f.name] ?? '', fieldLabel(f));
      if (v === undefined) delete config[f.name];
      else config[f.name] = v;
    }
    const body: Record<string, unknown> = {
      type,
      name: name.trim(),
      base_url: baseUrl.trim(),
      config,
      models: models.trim(),
      model_mapping: mapping.trim() || '{}',
      priority: Number(priority) || 0,
      weight: Number(weight) || 0,
      group: group.trim() || 'default',
      price: price.trim() === '' ? null : Number(price),
      status: enabled ? 1 : 2,
    };
    if (key.trim() || !c) body.key = key.trim();
    if (c) await put(`/api/channel/${c.id}`, body);
    else await post('/api/channel/', body);
    props.onDone();
  };
  const dims = provider?.supports.dimensions;
  return (
    <ActionForm action={action} onSubmit={submit} onCancel={props.onCancel} submitLabel={c ? t('common.save') : t('channels.create')}>
      <SelectField
        label={t('channels.type')}
        hint={
          provider &&
          t('channels.typeHint', {
            oneApi: provider.one_api_type ?? '—',
            dimensions: dims === 'yes' ? t('channels.yes') : dims === 'no' ? t('channels.no') : t('channels.someModels'),
          })
        }
        name="type"
        value={type}
        onValue={setType}
        choices={(props.types.length ? props.types : [{ type, label: type } as ChannelType]).map((x) => ({ value: x.type, label: typeLabel(lang, x, x.type) }))}
      />
      <InputField label={t('common.name')} name="name" required maxLength={100} value={name} onValue={setName} />
      <InputField
        label={t('channels.baseUrl')}
        hint={provider?.default_base_url ? t('channels.baseUrlDefault', { url: provider.default_base_url }) : t('channels.baseUrlRequired')}
        name="base_url"
        type="url"
        required={provider ? provider.default_base_url === null : false}
        placeholder={provider?.default_base_url ?? undefined}
        value={baseUrl}
        onValue={setBaseUrl}
      />
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
      {fields.length > 0 && (
        <fieldset class="form" data-testid="config-fields">
          <legend>{t('channels.settings', { type: typeLabel(lang, provider, type) })}</legend>
          {fields.map((f) => (
            <ConfigInput
              key={`${type}.${f.name}`}
              field={f}
              label={fieldLabel(f)}
              value={settings[f.name] ?? ''}
              onValue={(v) => setSettings((s) => ({ ...s, [f.name]: v }))}
            />
          ))}
        </fieldset>
      )}
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
      <InputField label={t('channels.groups')} hint={t('channels.groupsHint')} name="group" maxLength={1000} value={group} onValue={setGroup} />
      <CheckField name="enabled" checked={enabled} onChecked={setEnabled}>
        {t('channels.enabledLabel')}
      </CheckField>
    </ActionForm>
  );
}
