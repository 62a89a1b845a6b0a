// Dashboard: quota left and used, requests and quota per day and model over 7 days, rate now, redeem a code, service status.
import type { ComponentType } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { get, post } from '../api';
import type { ChartSeries } from '../charts/time-chart';
import { DataTable } from '../data-table';
import { InputField } from '../form';
import { fmtDate, fmtDuration, fmtNumber } from '../format';
import { t } from '../i18n';
import { setUser, useSession } from '../session';
import type { DashboardRow, LogStat, Status, User } from '../types';
import { type Async, Badge, ErrorNote, Facts, Loading, Page, toast, useAction, useAsync } from '../ui';

type Ready = { status: string; checks: Record<string, string> };

async function readiness(): Promise<Ready> {
  // 503 still carries which dependency failed.
  const res = await fetch('/readyz', { headers: { accept: 'application/json' } });
  return (await res.json()) as Ready;
}

/** The 7 UTC days the dashboard covers, oldest first, as YYYY-MM-DD and as Unix seconds. */
function lastSevenDays(): { keys: string[]; xs: number[] } {
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const keys: string[] = [];
  const xs: number[] = [];
  for (let i = 6; i >= 0; i--) {
    const ms = today - i * 86_400_000;
    keys.push(new Date(ms).toISOString().slice(0, 10));
    xs.push(ms / 1000);
  }
  return { keys, xs };
}

function seriesOf(rows: DashboardRow[], keys: string[], pick: (r: DashboardRow) => number): ChartSeries[] {
  const models = [...new Set(rows.map((r) => r.ModelName))].sort();
  return models.map((m) => ({
    label: m || '—',
    values: keys.map((day) => rows.filter((r) => r.Day === day && r.ModelName === m).reduce((sum, r) => sum + pick(r), 0)),
  }));
}

function LazyChart(props: { days: number[]; series: ChartSeries[]; label: string }) {
  const [Chart, setChart] = useState<ComponentType<{ days: number[]; series: ChartSeries[]; label: string }> | null>(null);
  useEffect(() => {
    let live = true;
    void import('../charts/time-chart').then((m) => live && setChart(() => m.default));
    return () => {
      live = false;
    };
  }, []);
  return Chart ? <Chart {...props} /> : <div class="chart placeholder" />;
}

/** A day-by-day chart of the week's usage in a card. */
function UsageChart(props: { title: string; usage: Async<unknown>; empty: boolean; days: number[]; series: ChartSeries[]; showError?: boolean }) {
  const { usage } = props;
  return (
    <section class="card">
      <h2>{props.title}</h2>
      {props.showError && <ErrorNote error={usage.error} onRetry={usage.reload} />}
      {usage.loading && !usage.data ? (
        <Loading />
      ) : props.empty ? (
        <p class="empty">{t('dashboard.noUsage')}</p>
      ) : (
        <LazyChart days={props.days} series={props.series} label={props.title} />
      )}
    </section>
  );
}

export default function DashboardPage() {
  const { user } = useSession();
  const self = useAsync(() => get<User>('/api/user/self'), []);
  const usage = useAsync(() => get<DashboardRow[]>('/api/user/dashboard'), []);
  const stat = useAsync(() => get<LogStat>('/api/log/self/stat'), []);
  const status = useAsync(() => get<Status>('/api/status'), []);
  const ready = useAsync(readiness, []);
  const me = user!;
  useEffect(() => {
    if (self.data) setUser(self.data);
  }, [self.data]);

  const days = useMemo(lastSevenDays, []);
  const rows = usage.data ?? [];
  const requests = useMemo(() => seriesOf(rows, days.keys, (r) => r.RequestCount), [rows, days]);
  const quota = useMemo(() => seriesOf(rows, days.keys, (r) => r.Quota), [rows, days]);
  const totalRequests = rows.reduce((s, r) => s + r.RequestCount, 0);

  return (
    <Page title={t('dashboard.title')}>
      <div class="tiles">
        <div class="tile">
          <span class="tile-label">{t('dashboard.quotaLeft')}</span>
          <strong class="tile-value" data-testid="quota-left">
            {fmtNumber(me.quota)}
          </strong>
        </div>
        <div class="tile">
          <span class="tile-label">{t('dashboard.quotaUsed')}</span>
          <strong class="tile-value">{fmtNumber(me.used_quota)}</strong>
        </div>
        <div class="tile">
          <span class="tile-label">{t('dashboard.requests')}</span>
          <strong class="tile-value">{fmtNumber(me.request_count)}</strong>
        </div>
        <div class="tile">
          <span class="tile-label">{t('dashboard.rate')}</span>
          <strong class="tile-value">{stat.data ? `${fmtNumber(stat.data.rpm)} / ${fmtNumber(stat.data.tpm)}` : '…'}</strong>
          <small class="muted">{t('dashboard.rateHint')}</small>
        </div>
      </div>

      <div class="grid-2">
        <UsageChart title={t('dashboard.requestsPerDay')} usage={usage} empty={totalRequests === 0} days={days.xs} series={requests} showError />
        <UsageChart title={t('dashboard.quotaPerDay')} usage={usage} empty={totalRequests === 0} days={days.xs} series={quota} />
      </div>
      <p class="hint">{t('dashboard.lagHint')}</p>
      {rows.length > 0 && (
        <details class="card">
          <summary>{t('dashboard.asTable')}</summary>
          <DataTable
            rows={rows}
            rowKey={(r) => `${r.Day}-${r.ModelName}`}
            columns={[
              { head: t('dashboard.day'), cell: (r) => r.Day },
              { head: t('common.model'), cell: (r) => r.ModelName },
              { head: t('dashboard.requests'), num: true, cell: (r) => fmtNumber(r.RequestCount) },
              { head: t('common.quota'), num: true, cell: (r) => fmtNumber(r.Quota) },
              { head: t('common.tokens'), num: true, cell: (r) => fmtNumber(r.PromptTokens + r.CompletionTokens) },
            ]}
          />
        </details>
      )}

      <div class="grid-2">
        <Redeem />
        <section class="card">
          <h2>{t('dashboard.status')}</h2>
          <ErrorNote error={status.error} />
          {status.data && (
            <Facts
              facts={[
                { label: t('dashboard.version'), value: status.data.version },
                {
                  label: t('dashboard.uptime'),
                  value: fmtDuration(Date.now() / 1000 - status.data.start_time),
                  title: fmtDate(status.data.start_time),
                },
                { label: t('dashboard.retention'), value: t('dashboard.days', { n: status.data.log_retention_days }) },
                ...Object.entries(ready.data?.checks ?? {}).map(([name, state]) => ({
                  label: name === 'postgres' ? 'PostgreSQL' : name === 'redis' ? 'Redis' : name,
                  value: <Badge tone={state === 'ok' ? 'ok' : 'bad'}>{state === 'ok' ? t('dashboard.up') : t('dashboard.down')}</Badge>,
                })),
              ]}
            />
          )}
        </section>
      </div>
    </Page>
  );
}

function Redeem() {
  const [code, setCode] = useState('');
  const action = useAction();
  return (
    <section class="card">
      <h2>{t('dashboard.redeem')}</h2>
      <p class="muted">{t('dashboard.redeemHint')}</p>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            const added = await post<number>('/api/user/topup', { key: code.trim() });
            setCode('');
            toast(t('dashboard.redeemed', { n: fmtNumber(added) }));
            setUser(await get<User>('/api/user/self'));
          });
        }}
      >
        <InputField label={t('dashboard.code')} name="code" required autocomplete="off" spellcheck={false} value={code} onValue={setCode} />
        <button type="submit" class="primary" disabled={action.busy || !code.trim()}>
          {t('dashboard.redeemButton')}
        </button>
      </form>
      <ErrorNote error={action.error} />
    </section>
  );
}
