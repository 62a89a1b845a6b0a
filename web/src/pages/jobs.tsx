// Jobs: the caller's jobs with live state and progress (server-sent events), their results and errors; admins get Bull Board.
import { useEffect, useState } from 'preact/hooks';
import { del, describeError, get, post, query } from '../api';
import { DataTable } from '../data-table';
import { SelectField } from '../form';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { jobStateKey, watchJob } from '../job-events';
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
        () => update(id, { state: 'completed', progress: 100, finishedAt: new Date().toISOString() }),
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
            { head: t('jobs.state'), cell: (j) => <Badge tone={tone(j.state)}>{t(jobStateKey(j.state))}</Badge> },
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
      {job.result !== undefined && job.result !== null && (
        <>
          <h3>{t('jobs.result')}</h3>
          <pre class="json">{JSON.stringify(job.result, null, 2)}</pre>
        </>
      )}
      {job.result == null && !job.error && <p class="muted">{t('jobs.noResult')}</p>}
    </div>
  );
}
