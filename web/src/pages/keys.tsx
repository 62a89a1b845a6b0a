// API keys: create (the whole key shown once, with a copy button), list masked, enable/disable, edit, delete.
import { useState } from 'preact/hooks';
import { del, post, put } from '../api';
import { RowButtons } from '../data-table';
import { ActionForm, CheckField, InputField } from '../form';
import { fmtDate, fmtNumber, fromLocalInput, toLocalInput } from '../format';
import { t } from '../i18n';
import { forgetKey, rememberKey } from '../keys-memory';
import { SearchListPage, useSearchList } from '../paged-list';
import { navigate } from '../router';
import type { Token } from '../types';
import { askDelete, CopyButton, DialogFor, StatusBadge, type Tone, toast, useAction } from '../ui';

export function tokenStatus(s: number): { tone: Tone; label: string } {
  switch (s) {
    case 1:
      return { tone: 'ok', label: t('keys.status.enabled') };
    case 2:
      return { tone: 'muted', label: t('keys.status.disabled') };
    case 3:
      return { tone: 'warn', label: t('keys.status.expired') };
    default:
      return { tone: 'warn', label: t('keys.status.exhausted') };
  }
}

export default function KeysPage() {
  const state = useSearchList<Token>('/api/token/');
  const [editing, setEditing] = useState<Token | 'new' | null>(null);
  const [shown, setShown] = useState<Token | null>(null);

  const toggle = (tok: Token) => state.change(() => put('/api/token/?status_only=1', { id: tok.id, status: tok.status === 1 ? 2 : 1 }));
  const remove = (tok: Token) =>
    state.changeIfConfirmed(askDelete(t('keys.deleteTitle'), t('keys.deleteText', { name: tok.name || `#${tok.id}` })), async () => {
      await del(`/api/token/${tok.id}`);
      forgetKey(tok.id);
      toast(t('keys.deleted'));
    });

  return (
    <SearchListPage
      title={t('keys.title')}
      createLabel={t('keys.create')}
      onCreate={() => setEditing('new')}
      intro={t('keys.intro')}
      state={state}
      searchLabel={t('keys.searchLabel')}
      none={t('keys.none')}
      testId="keys-table"
      rowKey={(tok) => tok.id}
      columns={[
        { head: t('common.name'), cell: (tok) => tok.name || <span class="muted">#{tok.id}</span> },
        { head: t('keys.key'), cell: (tok) => <code>{tok.key}</code> },
        { head: t('common.status'), cell: (tok) => <StatusBadge {...tokenStatus(tok.status)} /> },
        { head: t('keys.remaining'), num: true, cell: (tok) => (tok.unlimited_quota ? t('keys.unlimited') : fmtNumber(tok.remain_quota)) },
        { head: t('keys.used'), num: true, cell: (tok) => fmtNumber(tok.used_quota) },
        { head: t('keys.expires'), cell: (tok) => (tok.expired_time === -1 ? t('keys.never') : fmtDate(tok.expired_time)) },
        { head: t('keys.models'), cell: (tok) => tok.models || <span class="muted">{t('keys.allModels')}</span> },
        { head: t('keys.subnet'), cell: (tok) => tok.subnet || <span class="muted">{t('keys.anyAddress')}</span> },
      ]}
      actions={(tok) => (
        <RowButtons
          enabled={tok.status === 1}
          busy={state.action.busy}
          onToggle={() => void toggle(tok)}
          onEdit={() => setEditing(tok)}
          onDelete={() => void remove(tok)}
        />
      )}
    >
      <DialogFor value={editing} title={(tok) => (tok === 'new' ? t('keys.create') : t('keys.edit'))} onClose={() => setEditing(null)}>
        {(tok) => (
          <TokenForm
            token={tok === 'new' ? undefined : tok}
            onDone={(saved) => {
              setEditing(null);
              if (tok === 'new') {
                // The whole key, this once.
                rememberKey({ id: saved.id, name: saved.name, key: saved.key });
                setShown(saved);
              } else toast(t('common.saved'));
              state.list.reload();
            }}
            onCancel={() => setEditing(null)}
          />
        )}
      </DialogFor>
      <DialogFor value={shown} title={() => t('keys.createdTitle')} onClose={() => setShown(null)}>
        {(tok) => (
          <div class="key-shown">
            <p class="note warn">{t('keys.shownOnce')}</p>
            <code class="secret" data-testid="new-key">
              {tok.key}
            </code>
            <div class="form-actions">
              <CopyButton text={tok.key} class="primary" />
              <button
                type="button"
                onClick={() => {
                  setShown(null);
                  navigate('/playground');
                }}
              >
                {t('keys.tryInPlayground')}
              </button>
              <button type="button" onClick={() => setShown(null)}>
                {t('common.done')}
              </button>
            </div>
          </div>
        )}
      </DialogFor>
    </SearchListPage>
  );
}

/** Create (no `token`) or edit a key. */
export function TokenForm(props: { token?: Token; preset?: Partial<Token>; onDone: (t: Token) => void; onCancel: () => void }) {
  const init = props.token ?? props.preset;
  const [name, setName] = useState(init?.name ?? '');
  const [unlimited, setUnlimited] = useState(init?.unlimited_quota ?? true);
  const [remain, setRemain] = useState(String(init?.remain_quota ?? 0));
  const [never, setNever] = useState((init?.expired_time ?? -1) === -1);
  const [expires, setExpires] = useState(init?.expired_time && init.expired_time > 0 ? toLocalInput(init.expired_time) : '');
  const [models, setModels] = useState(init?.models ?? '');
  const [subnet, setSubnet] = useState(init?.subnet ?? '');
  const action = useAction();

  const submit = async () => {
    const body = {
      name: name.trim(),
      unlimited_quota: unlimited,
      remain_quota: Number(remain) || 0,
      expired_time: never ? -1 : (fromLocalInput(expires) ?? -1),
      models: models.trim(),
      subnet: subnet.trim(),
    };
    const tok = props.token ? await put<Token>(`/api/token/${props.token.id}`, body) : await post<Token>('/api/token/', body);
    props.onDone(tok);
  };
  return (
    <ActionForm action={action} onSubmit={submit} onCancel={props.onCancel} submitLabel={props.token ? t('common.save') : t('keys.create')}>
      <InputField label={t('common.name')} name="name" maxLength={50} value={name} onValue={setName} />
      <CheckField name="unlimited" checked={unlimited} onChecked={setUnlimited}>
        {t('keys.unlimitedLabel')}
      </CheckField>
      {!unlimited && (
        <InputField
          label={t('keys.remaining')}
          hint={t('keys.remainingHint')}
          name="remain_quota"
          type="number"
          min={0}
          step={1}
          value={remain}
          onValue={setRemain}
        />
      )}
      <CheckField name="never" checked={never} onChecked={setNever}>
        {t('keys.neverExpires')}
      </CheckField>
      {!never && <InputField label={t('keys.expires')} name="expires" type="datetime-local" required value={expires} onValue={setExpires} />}
      <InputField label={t('keys.models')} hint={t('keys.modelsHint')} name="models" placeholder="local-hash-v1" value={models} onValue={setModels} />
      <InputField label={t('keys.subnet')} hint={t('keys.subnetHint')} name="subnet" placeholder="10.0.0.0/8, 127.0.0.1" value={subnet} onValue={setSubnet} />
    </ActionForm>
  );
}
