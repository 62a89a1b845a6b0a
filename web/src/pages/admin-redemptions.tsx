// Admin: redemption codes — create N at once (copy them all), list, disable/enable, delete.
import { useState } from 'preact/hooks';
import { del, post, put } from '../api';
import { RowButtons } from '../data-table';
import { ActionForm, InputField } from '../form';
import { fmtDate, fmtNumber } from '../format';
import { t } from '../i18n';
import { SearchListPage, useSearchList } from '../paged-list';
import type { Redemption } from '../types';
import { askDelete, CopyButton, DialogFor, StatusBadge, type Tone, toast, useAction } from '../ui';

function codeStatus(s: number): { tone: Tone; label: string } {
  if (s === 1) return { tone: 'ok', label: t('codes.status.unused') };
  if (s === 3) return { tone: 'info', label: t('codes.status.used') };
  return { tone: 'muted', label: t('common.disabled') };
}

export default function AdminRedemptionsPage() {
  const state = useSearchList<Redemption>('/api/redemption/');
  const [creating, setCreating] = useState(false);
  const [made, setMade] = useState<string[] | null>(null);

  const toggle = (r: Redemption) => state.change(() => put('/api/redemption/?status_only=1', { id: r.id, status: r.status === 1 ? 2 : 1 }));
  const remove = (r: Redemption) =>
    state.changeIfConfirmed(askDelete(t('codes.deleteTitle'), t('codes.deleteText', { name: r.name, id: r.id })), () => del(`/api/redemption/${r.id}`));

  return (
    <SearchListPage
      title={t('codes.title')}
      createLabel={t('codes.create')}
      onCreate={() => setCreating(true)}
      state={state}
      searchLabel={t('codes.searchLabel')}
      none={t('codes.none')}
      testId="codes-table"
      rowKey={(r) => r.id}
      columns={[
        { head: '#', cell: (r) => r.id },
        { head: t('common.name'), cell: (r) => r.name },
        { head: t('codes.code'), cell: (r) => <code>{r.key}</code> },
        { head: t('common.quota'), num: true, cell: (r) => fmtNumber(r.quota) },
        { head: t('common.status'), cell: (r) => <StatusBadge {...codeStatus(r.status)} /> },
        { head: t('codes.createdAt'), cell: (r) => fmtDate(r.created_time) },
        { head: t('codes.redeemedAt'), cell: (r) => fmtDate(r.redeemed_time) || '—' },
      ]}
      actions={(r) => {
        // A used code can only be deleted.
        const usable = r.status !== 3;
        return (
          <RowButtons enabled={r.status === 1} busy={state.action.busy} onToggle={usable ? () => void toggle(r) : undefined} onDelete={() => void remove(r)}>
            {usable && <CopyButton text={r.key} />}
          </RowButtons>
        );
      }}
    >
      <DialogFor value={creating} title={() => t('codes.create')} onClose={() => setCreating(false)}>
        {() => (
          <CreateCodes
            onDone={(codes) => {
              setCreating(false);
              setMade(codes);
              toast(t('codes.made', { n: codes.length }));
              state.list.reload();
            }}
            onCancel={() => setCreating(false)}
          />
        )}
      </DialogFor>
      <DialogFor value={made} title={(codes) => t('codes.madeTitle', { n: codes.length })} onClose={() => setMade(null)}>
        {(codes) => (
          <div class="form">
            <textarea class="codes" readOnly rows={Math.min(12, codes.length + 1)} data-testid="new-codes" value={codes.join('\n')} />
            <div class="form-actions">
              <CopyButton text={codes.join('\n')} label={t('codes.copyAll')} class="primary" />
              <button type="button" onClick={() => setMade(null)}>
                {t('common.done')}
              </button>
            </div>
          </div>
        )}
      </DialogFor>
    </SearchListPage>
  );
}

function CreateCodes(props: { onDone: (codes: string[]) => void; onCancel: () => void }) {
  const [name, setName] = useState('');
  const [quota, setQuota] = useState('1000');
  const [count, setCount] = useState('1');
  const action = useAction();
  return (
    <ActionForm
      action={action}
      onSubmit={async () => props.onDone(await post<string[]>('/api/redemption/', { name: name.trim(), quota: Number(quota), count: Number(count) }))}
      onCancel={props.onCancel}
      submitLabel={t('codes.create')}
    >
      <InputField label={t('common.name')} hint={t('codes.nameHint')} name="name" required maxLength={20} value={name} onValue={setName} />
      <div class="inline-form">
        <InputField label={t('codes.quotaEach')} name="quota" type="number" min={1} step={1} required value={quota} onValue={setQuota} />
        <InputField label={t('codes.count')} name="count" type="number" min={1} max={100} step={1} required value={count} onValue={setCount} />
      </div>
    </ActionForm>
  );
}
