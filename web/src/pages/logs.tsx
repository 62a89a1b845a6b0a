// Usage and audit logs with filters: your own at /logs, everyone's (below your role) at /admin/logs.
import { useState } from 'preact/hooks';
import { call, get, query } from '../api';
import { fmtDate, fmtNumber, fromLocalInput } from '../format';
import { type MessageKey, t } from '../i18n';
import { useLocation } from '../router';
import type { LogRow, LogStat } from '../types';
import { Badge, Empty, ErrorNote, Field, Loading, Page, Pager, type Tone, useAsync } from '../ui';

const PAGE_SIZE = 20;
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
  const list = useAsync(async () => {
    const res = await call<LogRow[]>('GET', `${admin ? '/api/log/' : '/api/log/self'}${query({ ...params, p: page, page_size: PAGE_SIZE })}`);
    return { rows: res.data, total: Number(res.headers.get('x-total-count') ?? res.data.length), capped: res.headers.get('x-total-count-capped') === 'true' };
  }, [admin, filters, page]);
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
        <Field label={t('logs.type')}>
          <select name="type" value={draft.type} onChange={(e) => set('type', e.currentTarget.value)}>
            <option value="0">{t('common.all')}</option>
            {TYPES.map((ty) => (
              <option key={ty.id} value={ty.id}>
                {t(ty.key)}
              </option>
            ))}
          </select>
        </Field>
        {admin && (
          <Field label={t('logs.user')}>
            <input name="username" value={draft.username} onInput={(e) => set('username', e.currentTarget.value)} />
          </Field>
        )}
        <Field label={t('common.model')}>
          <input name="model_name" value={draft.model_name} onInput={(e) => set('model_name', e.currentTarget.value)} />
        </Field>
        <Field label={t('logs.token')}>
          <input name="token_name" value={draft.token_name} onInput={(e) => set('token_name', e.currentTarget.value)} />
        </Field>
        {admin && (
          <Field label={t('logs.channel')}>
            <input name="channel" type="number" min={0} value={draft.channel} onInput={(e) => set('channel', e.currentTarget.value)} />
          </Field>
        )}
        <Field label={t('logs.from')}>
          <input name="start" type="datetime-local" value={draft.start} onInput={(e) => set('start', e.currentTarget.value)} />
        </Field>
        <Field label={t('logs.until')}>
          <input name="end" type="datetime-local" value={draft.end} onInput={(e) => set('end', e.currentTarget.value)} />
        </Field>
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
      {list.loading && !list.data ? (
        <Loading />
      ) : list.data?.rows.length === 0 ? (
        <Empty>{t('logs.none')}</Empty>
      ) : (
        <div class="table-wrap">
          <table data-testid="logs-table">
            <thead>
              <tr>
                <th scope="col">{t('logs.time')}</th>
                <th scope="col">{t('logs.type')}</th>
                {admin && <th scope="col">{t('logs.user')}</th>}
                <th scope="col">{t('logs.token')}</th>
                <th scope="col">{t('common.model')}</th>
                <th scope="col" class="num">
                  {t('common.quota')}
                </th>
                <th scope="col" class="num">
                  {t('common.tokens')}
                </th>
                <th scope="col" class="num">
                  {t('logs.elapsed')}
                </th>
                <th scope="col">{t('logs.content')}</th>
              </tr>
            </thead>
            <tbody>
              {list.data?.rows.map((r) => {
                const ty = TYPES.find((x) => x.id === r.type);
                return (
                  <tr key={r.id}>
                    <td>{fmtDate(r.created_at)}</td>
                    <td>
                      <Badge tone={ty?.tone ?? 'muted'}>{ty ? t(ty.key) : r.type}</Badge>
                    </td>
                    {admin && <td>{r.username}</td>}
                    <td>{r.token_name || '—'}</td>
                    <td>{r.model_name || '—'}</td>
                    <td class="num">{fmtNumber(r.quota)}</td>
                    <td class="num">{fmtNumber(r.prompt_tokens + r.completion_tokens)}</td>
                    <td class="num">{r.elapsed_time ? `${fmtNumber(r.elapsed_time)} ms` : '—'}</td>
                    <td class="wrap">
                      {r.content}
                      {r.request_count > 1 && <span class="muted"> ×{r.request_count}</span>}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      {list.data && <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} capped={list.data.capped} onPage={setPage} />}
    </Page>
  );
}
