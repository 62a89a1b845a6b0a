// Dashboard: quota left and used, requests and quota per day and model over 7 days, rate now, redeem a code, service status.
import type { ComponentType } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { get, post } from '../api';
import type { ChartSeries } from '../charts/time-chart';
import { fmtDate, fmtDuration, fmtNumber } from '../format';
import { t } from '../i18n';
import { setUser, useSession } from '../session';
import type { DashboardRow, LogStat, Status, User } from '../types';
import { Badge, ErrorNote, Field, Loading, Page, toast, useAction, useAsync } from '../ui';

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
        <section class="card">
          <h2>{t('dashboard.requestsPerDay')}</h2>
          <ErrorNote error={usage.error} onRetry={usage.reload} />
          {usage.loading && !usage.data ? (
            <Loading />
          ) : totalRequests === 0 ? (
            <p class="empty">{t('dashboard.noUsage')}</p>
          ) : (
            <LazyChart days={days.xs} series={requests} label={t('dashboard.requestsPerDay')} />
          )}
        </section>
        <section class="card">
          <h2>{t('dashboard.quotaPerDay')}</h2>
          {usage.loading && !usage.data ? (
            <Loading />
          ) : totalRequests === 0 ? (
            <p class="empty">{t('dashboard.noUsage')}</p>
          ) : (
            <LazyChart days={days.xs} series={quota} label={t('dashboard.quotaPerDay')} />
          )}
        </section>
      </div>
      <p class="hint">{t('dashboard.lagHint')}</p>
      {rows.length > 0 && (
        <details class="card">
          <summary>{t('dashboard.asTable')}</summary>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">{t('dashboard.day')}</th>
                  <th scope="col">{t('common.model')}</th>
                  <th scope="col" class="num">
                    {t('dashboard.requests')}
                  </th>
                  <th scope="col" class="num">
                    {t('common.quota')}
                  </th>
                  <th scope="col" class="num">
                    {t('common.tokens')}
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={`${r.Day}-${r.ModelName}`}>
                    <td>{r.Day}</td>
                    <td>{r.ModelName}</td>
                    <td class="num">{fmtNumber(r.RequestCount)}</td>
                    <td class="num">{fmtNumber(r.Quota)}</td>
                    <td class="num">{fmtNumber(r.PromptTokens + r.CompletionTokens)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      )}

      <div class="grid-2">
        <Redeem />
        <section class="card">
          <h2>{t('dashboard.status')}</h2>
          <ErrorNote error={status.error} />
          {status.data && (
            <dl class="facts">
              <dt>{t('dashboard.version')}</dt>
              <dd>{status.data.version}</dd>
              <dt>{t('dashboard.uptime')}</dt>
              <dd title={fmtDate(status.data.start_time)}>{fmtDuration(Date.now() / 1000 - status.data.start_time)}</dd>
              <dt>{t('dashboard.retention')}</dt>
              <dd>{t('dashboard.days', { n: status.data.log_retention_days })}</dd>
              {ready.data &&
                Object.entries(ready.data.checks).map(([name, state]) => (
                  <div key={name}>
                    <dt>{name === 'postgres' ? 'PostgreSQL' : name === 'redis' ? 'Redis' : name}</dt>
                    <dd>
                      <Badge tone={state === 'ok' ? 'ok' : 'bad'}>{state === 'ok' ? t('dashboard.up') : t('dashboard.down')}</Badge>
                    </dd>
                  </div>
                ))}
            </dl>
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
        <Field label={t('dashboard.code')}>
          <input name="code" required autocomplete="off" spellcheck={false} value={code} onInput={(e) => setCode(e.currentTarget.value)} />
        </Field>
        <button type="submit" class="primary" disabled={action.busy || !code.trim()}>
          {t('dashboard.redeemButton')}
        </button>
      </form>
      <ErrorNote error={action.error} />
    </section>
  );
}
