// Jobs: the caller's jobs with live state and progress (server-sent events), their results and errors; admins get Bull Board.
import { useEffect, useState } from 'preact/hooks';
import { del, describeError, get, post, query } from '../api';
import { DataTable } from '../data-table';
import { SelectField } from '../form';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { jobStateKey, watchJob } from '../job-events';
import { onLinkClick } from '../router';
import { isAdmin, useSession } from '../session';
import type { Job, JobPage, JobSummary } from '../types';
import { Badge, Empty, ErrorNote, Loading, Page, type Tone, useAction } from '../ui';

const QUEUES = ['content', 'embeddings', 'mail'];
const STATES = ['waiting', 'active', 'delayed', 'completed', 'failed', 'cancelled'];
/** States a job can still be cancelled in (DELETE /api/jobs/{id}); a failed one can be retried. */
const CANCELLABLE = ['waiting', 'active', 'delayed'];
const LIVE_LIMIT = 10;
const ALL = () => ({ value: '', label: t('common.all') });

const tone = (state: string): Tone => (state === 'completed' ? 'ok' : state === 'failed' ? 'bad' : state === 'active' ? 'info' : 'muted');
const isOver = (state: string) => state === 'completed' || state === 'failed' || state === 'cancelled';

/** A job whose result counts entries that each succeed or fail on their own (a content batch): `{success, failed, total, errors, created}`. */
interface EntriesResult {
  success: number;
  failed: number;
  total: number;
  errors: { index: number; url: string; error: string }[];
  created?: { index: number; id: string; url: string }[];
}

function entriesOf(result: unknown): EntriesResult | null {
  const r = result as Partial<EntriesResult> | null;
  if (!r || typeof r !== 'object' || typeof r.failed !== 'number' || typeof r.total !== 'number' || !Array.isArray(r.errors)) return null;
  return r as EntriesResult;
}

/** The kinds whose results are counted entries: their rows read "Done, 2 of 5 failed" rather than a plain "Done". */
const COUNTED = new Set(['content.batch']);

/** A row's state badge: a completed job some of whose entries failed says so, in warning colours (all failed: in red). */
function StateBadge(props: { state: string; entries?: EntriesResult }) {
  const e = props.entries;
  if (props.state === 'completed' && e && e.failed > 0) {
    const all = e.failed >= e.total;
    return (
      <Badge tone={all ? 'bad' : 'warn'}>{all ? t('jobs.allFailed', { total: e.total }) : t('jobs.someFailed', { failed: e.failed, total: e.total })}</Badge>
    );
  }
  return <Badge tone={tone(props.state)}>{t(jobStateKey(props.state))}</Badge>;
}

function progressOf(p: unknown): number | null {
  if (typeof p === 'number') return Math.max(0, Math.min(100, p));
  if (p && typeof p === 'object' && typeof (p as { percent?: unknown }).percent === 'number') return (p as { percent: number }).percent;
  return null;
}

export default function JobsPage() {
  const { user } = useSession();
  const [queue, setQueue] = useState('');
  const [state, setState] = useState('');
  const [jobs, setJobs] = useState<JobSummary[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [openId, setOpenId] = useState<string | null>(null);
  /** The entries of completed counted jobs (read once each: a listing carries no results). */
  const [entries, setEntries] = useState<Record<string, EntriesResult | null>>({});
  const action = useAction();

  const load = (more: boolean) =>
    action.run(async () => {
      const res = await get<JobPage>(`/api/jobs${query({ limit: 20, queue, state, cursor: more ? cursor : undefined })}`);
      setJobs((prev) => (more && prev ? [...prev, ...res.jobs] : res.jobs));
      setCursor(res.nextCursor);
    });
  useEffect(() => {
    void load(false);
  }, [queue, state]);

  const replace = (job: Job) => setJobs((list) => list?.map((j) => (j.id === job.id ? { ...j, ...job } : j)) ?? null);
  const cancel = (j: JobSummary) =>
    action.runIfConfirmed({ title: t('jobs.cancelTitle'), message: t('jobs.cancelText', { name: j.name }), confirmLabel: t('jobs.cancel') }, async () =>
      replace(await del<Job>(`/api/jobs/${encodeURIComponent(j.id)}`)),
    );
  const retry = (j: JobSummary) =>
    action.runIfConfirmed(
      { title: t('jobs.retryTitle'), message: t('jobs.retryText', { name: j.name }), confirmLabel: t('jobs.retry'), danger: false },
      async () => replace(await post<Job>(`/api/jobs/${encodeURIComponent(j.id)}/retry`)),
    );

  // Completed counted jobs: their results read, one at a time, for how many of their entries failed.
  const unread = (jobs ?? []).filter((j) => j.state === 'completed' && COUNTED.has(j.name) && !(j.id in entries)).map((j) => j.id);
  useEffect(() => {
    let live = true;
    void (async () => {
      for (const id of unread) {
        const job = await get<Job>(`/api/jobs/${encodeURIComponent(id)}`).catch(() => null);
        if (!live) return;
        setEntries((m) => ({ ...m, [id]: entriesOf(job?.result) }));
      }
    })();
    return () => {
      live = false;
    };
  }, [unread.join(',')]);

  // Unfinished jobs are followed live: their state, progress and end arrive over their event streams.
  const unfinished = (jobs ?? [])
    .filter((j) => !isOver(j.state))
    .slice(0, LIVE_LIMIT)
    .map((j) => j.id);
  const liveKey = unfinished.join(',');
  useEffect(() => {
    const update = (id: string, patch: Partial<JobSummary>) => setJobs((list) => list?.map((j) => (j.id === id ? { ...j, ...patch } : j)) ?? null);
    const watches = unfinished.map((id) => {
      const w = watchJob(id, {
        onState: (job) => update(id, { state: job.state, progress: job.progress, attempts: job.attempts, processedAt: job.processedAt }),
        onProgress: (progress) => update(id, { progress, state: 'active' }),
      });
      w.done.then(
        (result) => {
          setEntries((m) => ({ ...m, [id]: entriesOf(result) }));
          update(id, { state: 'completed', progress: 100, finishedAt: new Date().toISOString() });
        },
        (err) => {
          if ((err as Error).name === 'AbortError') return;
          const { detail } = describeError(err);
          update(id, { state: 'failed', error: { status: (err as { status?: number }).status ?? 500, message: detail } });
        },
      );
      return w;
    });
    return () => {
      for (const w of watches) w.close();
    };
  }, [liveKey]);

  return (
    <Page
      title={t('jobs.title')}
      actions={
        isAdmin(user) && (
          <a class="button" href="/admin/queues">
            {t('jobs.board')}
          </a>
        )
      }
    >
      <p class="muted">{t('jobs.intro')}</p>
      <div class="toolbar">
        <SelectField label={t('jobs.queue')} name="queue" value={queue} onValue={setQueue} choices={[ALL(), ...QUEUES.map((q) => ({ value: q, label: q }))]} />
        <SelectField
          label={t('jobs.state')}
          name="state"
          value={state}
          onValue={setState}
          choices={[ALL(), ...STATES.map((s) => ({ value: s, label: t(jobStateKey(s)) }))]}
        />
        <button type="button" onClick={() => void load(false)}>
          {t('common.refresh')}
        </button>
      </div>
      <ErrorNote error={action.error} />
      {!jobs && action.busy && <Loading />}
      {jobs?.length === 0 && <Empty>{t('jobs.none')}</Empty>}
      {jobs && jobs.length > 0 && (
        <DataTable
          rows={jobs}
          testId="jobs-table"
          rowKey={(j) => j.id}
          columns={[
            {
              head: t('jobs.job'),
              cell: (j) => (
                <>
                  <button type="button" class="link" aria-expanded={openId === j.id} onClick={() => setOpenId(openId === j.id ? null : j.id)}>
                    {j.name}
                  </button>
                  <div class="muted small">
                    <code>{j.id}</code>
                  </div>
                </>
              ),
            },
            { head: t('jobs.queue'), cell: (j) => j.queue },
            { head: t('jobs.state'), cell: (j) => <StateBadge state={j.state} entries={entries[j.id] ?? undefined} /> },
            {
              head: t('jobs.progress'),
              cell: (j) => {
                const pct = j.state === 'completed' ? 100 : progressOf(j.progress);
                return pct === null ? '—' : <progress max={100} value={pct} aria-label={`${pct}%`} />;
              },
            },
            { head: t('jobs.attempts'), num: true, cell: (j) => j.attempts },
            { head: t('jobs.created'), cell: (j) => fmtDate(j.createdAt) },
            { head: t('jobs.finished'), cell: (j) => fmtDate(j.finishedAt) || '—' },
            {
              head: t('jobs.actions'),
              cell: (j) =>
                CANCELLABLE.includes(j.state) ? (
                  <button type="button" class="small" disabled={action.busy} onClick={() => void cancel(j)}>
                    {t('jobs.cancel')}
                  </button>
                ) : j.state === 'failed' ? (
                  <button type="button" class="small" disabled={action.busy} onClick={() => void retry(j)}>
                    {t('jobs.retry')}
                  </button>
                ) : null,
            },
          ]}
          after={(j) =>
            openId === j.id && (
              <tr class="detail">
                <td colSpan={8}>
                  <JobDetail id={j.id} />
                </td>
              </tr>
            )
          }
        />
      )}
      {cursor && (
        <button type="button" class="block" disabled={action.busy} onClick={() => void load(true)}>
          {t('common.loadMore')}
        </button>
      )}
    </Page>
  );
}

function JobDetail(props: { id: string }) {
  const [job, setJob] = useState<Job | null>(null);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    get<Job>(`/api/jobs/${encodeURIComponent(props.id)}`).then(setJob, setError);
  }, [props.id]);
  if (error) return <ErrorNote error={error} />;
  if (!job) return <Loading />;
  return (
    <div class="job-detail">
      {job.error && (
        <p class="note error">
          <strong>{t('jobs.failedWith', { status: job.error.status })}</strong> {job.error.message}
        </p>
      )}
      {job.result !== undefined &&
        job.result !== null &&
        (entriesOf(job.result) ? <Entries result={entriesOf(job.result)!} /> : <RawResult result={job.result} open />)}
      {job.result == null && !job.error && <p class="muted">{t('jobs.noResult')}</p>}
    </div>
  );
}

function RawResult(props: { result: unknown; open?: boolean }) {
  const json = <pre class="json">{JSON.stringify(props.result, null, 2)}</pre>;
  if (props.open)
    return (
      <>
        <h3>{t('jobs.result')}</h3>
        {json}
      </>
    );
  return (
    <details>
      <summary>{t('jobs.rawResult')}</summary>
      {json}
    </details>
  );
}

/** A counted job's result in words: how many entries were stored, and each failed one (its number, url and why). */
function Entries(props: { result: EntriesResult }) {
  const r = props.result;
  return (
    <>
      <h3>{t('jobs.result')}</h3>
      <p class={r.failed ? 'note warn' : 'note ok'} data-testid="job-entries">
        {t('jobs.entries', { success: r.success, failed: r.failed, total: r.total })}
      </p>
      {r.errors.length > 0 && (
        <DataTable
          rows={r.errors}
          testId="job-failed-entries"
          rowKey={(e) => e.index}
          columns={[
            { head: t('jobs.entry'), num: true, cell: (e) => e.index + 1 },
            { head: 'URL', class: 'wrap', cell: (e) => e.url },
            { head: t('jobs.why'), class: 'wrap', cell: (e) => e.error },
          ]}
        />
      )}
      {!!r.created?.length && (
        <details>
          <summary>{t('jobs.stored', { n: r.created.length })}</summary>
          <ul class="plain">
            {r.created.map((c) => (
              <li key={c.id}>
                {t('jobs.entry')} {c.index + 1}:{' '}
                <a href={`/content/${c.id}`} onClick={(e) => onLinkClick(e, `/content/${c.id}`)}>
                  {c.url}
                </a>
              </li>
            ))}
          </ul>
        </details>
      )}
      <RawResult result={r} />
    </>
  );
}
