// Usage and audit logs with filters: your own at /logs, everyone's (below your role) at /admin/logs.
import { useEffect, useState } from 'preact/hooks';
import { get, query } from '../api';
import { LoadedTable } from '../data-table';
import { InputField, SelectField } from '../form';
import { fmtDate, fmtNumber, fromLocalInput } from '../format';
import { langStore, type MessageKey, t } from '../i18n';
import { parseChange, parseLogContent } from '../log-text';
import { getRows, PAGE_SIZE } from '../paged-list';
import { setSearch, useLocation } from '../router';
import type { LogRow, LogStat } from '../types';
import { Badge, ErrorNote, Page, Pager, type Tone, useAsync } from '../ui';

const TYPES: { id: number; key: MessageKey; tone: Tone }[] = [
  { id: 1, key: 'logs.type.topup', tone: 'ok' },
  { id: 2, key: 'logs.type.consume', tone: 'info' },
  { id: 3, key: 'logs.type.manage', tone: 'muted' },
  { id: 4, key: 'logs.type.system', tone: 'muted' },
  { id: 5, key: 'logs.type.error', tone: 'bad' },
];

const FILTERS = ['type', 'model_name', 'token_name', 'username', 'channel', 'start', 'end'] as const;
type Filters = Record<(typeof FILTERS)[number], string>;
const EMPTY: Filters = { type: '0', model_name: '', token_name: '', username: '', channel: '', start: '', end: '' };

/** The filters and the page kept in the address (?type=1&model_name=…&p=2), so that a reload or a shared link shows the same rows. */
function fromSearch(search: string): { filters: Filters; page: number } {
  const q = new URLSearchParams(search);
  const filters = { ...EMPTY };
  for (const k of FILTERS) filters[k] = q.get(k) ?? EMPTY[k];
  const page = Number(q.get('p'));
  return { filters, page: Number.isInteger(page) && page > 0 ? page : 0 };
}

function toSearch(filters: Filters, page: number): URLSearchParams {
  const q = new URLSearchParams();
  for (const k of FILTERS) if (filters[k] && filters[k] !== EMPTY[k]) q.set(k, filters[k]);
  if (page > 0) q.set('p', String(page));
  return q;
}

/** A row's details in the reader's language (the server writes them in English: see log-text.ts). */
function details(content: string): string {
  if (langStore.get() === 'en') return content;
  const parsed = parseLogContent(content);
  if (!parsed) return content;
  const changes = parsed.changes?.map((c) => {
    const known = parseChange(c);
    return known ? t(known.key, { rest: known.rest }) : c;
  });
  return t(parsed.key, changes ? { ...parsed.vars, changes: changes.join('；') } : parsed.vars);
}

export default function LogsPage() {
  const loc = useLocation();
  const admin = loc.path.startsWith('/admin/');
  const { filters, page } = fromSearch(loc.search);
  const [draft, setDraft] = useState<Filters>(filters);
  // Back and forward change the address: the form follows it.
  useEffect(() => setDraft(fromSearch(loc.search).filters), [loc.search]);
  const go = (f: Filters, p: number) => setSearch(toSearch(f, p));
  const params = {
    model_name: filters.model_name,
    token_name: filters.token_name,
    start_timestamp: fromLocalInput(filters.start),
    end_timestamp: fromLocalInput(filters.end),
    ...(admin ? { username: filters.username, channel: filters.channel } : {}),
  };
  const type = filters.type === '0' ? undefined : filters.type;
  const base = admin ? '/api/log' : '/api/log/self';
  const list = useAsync(
    () => getRows<LogRow>(`${admin ? '/api/log/' : '/api/log/self'}${query({ ...params, type, p: page, page_size: PAGE_SIZE })}`),
    [admin, loc.search],
  );
  // What the sums are of: quota spent by calls (consume rows) and quota added (top-up rows), each over the rows the
  // filters match; with a type chosen, that type's alone.
  const stat = useAsync(async () => {
    const of = (ty: number) => get<LogStat>(`${base}/stat${query({ ...params, type: ty })}`);
    const [used, added] = await Promise.all([!type || type === '2' ? of(2) : null, !type || type === '1' ? of(1) : null]);
    const rate = used ?? (await of(2));
    return { used: used?.quota, added: added?.quota, rpm: rate.rpm, tpm: rate.tpm };
  }, [admin, toSearch(filters, 0).toString()]);
  const set = (k: keyof Filters, v: string) => setDraft((d) => ({ ...d, [k]: v }));

  return (
    <Page title={admin ? t('logs.allTitle') : t('logs.title')}>
      <form
        class="filters card"
        onSubmit={(e) => {
          e.preventDefault();
          go(draft, 0);
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
              go(EMPTY, 0);
            }}
          >
            {t('common.reset')}
          </button>
        </div>
      </form>
      {stat.data && (
        <p class="muted" role="status" data-testid="logs-stat">
          {[
            (stat.data.used !== undefined || stat.data.added !== undefined) &&
              t('logs.statRows', {
                sums: [
                  stat.data.used !== undefined && t('logs.statUsed', { quota: fmtNumber(stat.data.used) }),
                  stat.data.added !== undefined && t('logs.statAdded', { quota: fmtNumber(stat.data.added) }),
                ]
                  .filter(Boolean)
                  .join(t('logs.statSep')),
              }),
            t('logs.statRate', { rpm: fmtNumber(stat.data.rpm), tpm: fmtNumber(stat.data.tpm) }),
          ]
            .filter(Boolean)
            .join(' · ')}
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
                {details(r.content)}
                {r.request_count > 1 && <span class="muted"> ×{r.request_count}</span>}
              </>
            ),
          },
        ]}
      />
      {list.data && <Pager page={page} pageSize={PAGE_SIZE} total={list.data.total} capped={list.data.capped} onPage={(p) => go(filters, p)} />}
    </Page>
  );
}
