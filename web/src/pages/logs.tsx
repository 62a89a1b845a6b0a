// Usage and audit logs with filters: your own at /logs, everyone's (below your role) at /admin/logs.
import { useState } from 'preact/hooks';
import { get, query } from '../api';
import { LoadedTable } from '../data-table';
import { InputField, SelectField } from '../form';
import { fmtDate, fmtNumber, fromLocalInput } from '../format';
import { type MessageKey, t } from '../i18n';
import { getRows, PAGE_SIZE } from '../paged-list';
import { useLocation } from '../router';
import type { LogRow, LogStat } from '../types';
import { Badge, ErrorNote, Page, Pager, type Tone, useAsync } from '../ui';

const TYPES: { id: number; key: MessageKey; tone: Tone }[] = [
  { id: 1, key: 'logs.type.topup', tone: 'ok' },
  { id: 2, key: 'logs.type.consume', tone: 'info' },
  { id: 3, key: 'logs.type.manage', tone: 'muted' },
  { id: 4, key: 'logs.type.system', tone: 'muted' },
  { id: 5, key: 'logs.type.error', tone: 'bad' },
];

interface Filters {
  type: string;
  model_name: string;
  token_name: string;
  username: string;
  channel: string;
  start: string;
  end: string;
}
const EMPTY: Filters = { type: '0', model_name: '', token_name: '', username: '', channel: '', start: '', end: '' };

export default function LogsPage() {
  const admin = useLocation().path.startsWith('/admin/');
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [page, setPage] = useState(0);
  const params = {
    type: filters.type === '0' ? undefined : filters.type,
    model_name: filters.model_name,
    token_name: filters.token_name,
    start_timestamp: fromLocalInput(filters.start),
    end_timestamp: fromLocalInput(filters.end),
    ...(admin ? { username: filters.username, channel: filters.channel } : {}),
  };
  const base = admin ? '/api/log' : '/api/log/self';
  const list = useAsync(
    () => getRows<LogRow>(`${admin ? '/api/log/' : '/api/log/self'}${query({ ...params, p: page, page_size: PAGE_SIZE })}`),
    [admin, filters, page],
  );
  const stat = useAsync(() => get<LogStat>(`${base}/stat${query(params)}`), [admin, filters]);
  const set = (k: keyof Filters, v: string) => setDraft((d) => ({ ...d, [k]: v }));

  return (
    <Page title={admin ? t('logs.allTitle') : t('logs.title')} wide>
      <form
        class="filters card"
        onSubmit={(e) => {
          e.preventDefault();
          setPage(0);
          setFilters(draft);
        }}
      >
        <SelectField
          label={t('logs.type')}
          name="type"
          value={draft.type}
          onValue={(v) => set('type', v)}
          choices={[{ value: '0', label: t('common.all') }, ...TYPES.map((ty) => ({ value: ty.id, label: t(ty.key) }))]}
        />
        {admin && <InputField label={t('logs.user')} name="username" value={draft.username} onValue={(v) => set('username', v)} />}
        <InputField label={t('common.model')} name="model_name" value={draft.model_name} onValue={(v) => set('model_name', v)} />
        <InputField label={t('logs.token')} name="token_name" value={draft.token_name} onValue={(v) => set('token_name', v)} />
        {admin && <InputField label={t('logs.channel')} name="channel" type="number" min={0} value={draft.channel} onValue={(v) => set('channel', v)} />}
        <InputField label={t('logs.from')} name="start" type="datetime-local" value={draft.start} onValue={(v) => set('start', v)} />
        <InputField label={t('logs.until')} name="end" type="datetime-local" value={draft.end} onValue={(v) => set('end', v)} />
        <div class="form-actions left">
          <button type="submit" class="primary">
            {t('common.apply')}
          </button>
          <button
            type="button"
            onClick={() => {
              setDraft(EMPTY);
              setFilters(EMPTY);
              setPage(0);
            }}
          >
            {t('common.reset')}
          </button>
        </div>
      </form>
      {stat.data && (
        <p class="muted" role="status">
          {t('logs.stat', { quota: fmtNumber(stat.data.quota), rpm: fmtNumber(stat.data.rpm), tpm: fmtNumber(stat.data.tpm) })}
        </p>
      )}
      <ErrorNote error={list.error} onRetry={list.reload} />
      <LoadedTable
        loading={list.loading}
        rows={list.data?.rows}
        empty={t('logs.none')}
        testId="logs-table"
        rowKey={(r) => r.id}
        columns={[
          { head: t('logs.time'), cell: (r) => fmtDate(r.created_at) },
          {
            head: t('logs.type'),
            cell: (r) => {
              const ty = TYPES.find((x) => x.id === r.type);
              return <Badge tone={ty?.tone ?? 'muted'}>{ty ? t(ty.key) : r.type}</Badge>;
            },
          },
          admin && { head: t('logs.user'), cell: (r) => r.username },
          { head: t('logs.token'), cell: (r) => r.token_name || '—' },
          { head: t('common.model'), cell: (r) => r.model_name || '—' },
          { head: t('common.quota'), num: true, cell: (r) => fmtNumber(r.quota) },
          { head: t('common.tokens'), num: true, cell: (r) => fmtNumber(r.prompt_tokens + r.completion_tokens) },
          { head: t('logs.elapsed'), num: true, cell: (r) => (r.elapsed_time ? `${fmtNumber(r.elapsed_time)} ms` : '—') },
          {
            head: t('logs.content'),
            class: 'wrap',
            cell: (r) => (
              <>
                {r.content}
                {r.request_count > 1 && <span class="muted"> ×{r.request_count}</span>}
              </>
            ),
          },
        ]}
      />
      {list.data && <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} capped={list.data.capped} onPage={setPage} />}
    </Page>
  );
}
