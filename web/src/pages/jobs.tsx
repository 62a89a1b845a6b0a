// Jobs: the caller's jobs with live state and progress (server-sent events), their results and errors; admins get Bull Board.
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { describeError, get, query } from '../api';
import { fmtDate } from '../format';
import { t } from '../i18n';
import { jobStateKey, watchJob } from '../job-events';
import { isAdmin, useSession } from '../session';
import type { Job } from '../types';
import { Badge, Empty, ErrorNote, Field, Loading, Page, type Tone, useAction } from '../ui';

const QUEUES = ['content', 'embeddings', 'mail'];
const STATES = ['waiting', 'active', 'delayed', 'completed', 'failed'];
const LIVE_LIMIT = 10;

const tone = (state: string): Tone => (state === 'completed' ? 'ok' : state === 'failed' ? 'bad' : state === 'active' ? 'info' : 'muted');

function progressOf(p: unknown): number | null {
  if (typeof p === 'number') return Math.max(0, Math.min(100, p));
  if (p && typeof p === 'object' && typeof (p as { percent?: unknown }).percent === 'number') return (p as { percent: number }).percent;
  return null;
}

export default function JobsPage() {
  const { user } = useSession();
  const [queue, setQueue] = useState('');
  const [state, setState] = useState('');
  const [jobs, setJobs] = useState<Job[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [openId, setOpenId] = useState<string | null>(null);
  const action = useAction();

  const load = (more: boolean) =>
    action.run(async () => {
      const res = await get<{ jobs: Job[]; nextCursor: string | null }>(`/api/jobs${query({ limit: 20, queue, state, cursor: more ? cursor : undefined })}`);
      setJobs((prev) => (more && prev ? [...prev, ...res.jobs] : res.jobs));
      setCursor(res.nextCursor);
    });
  useEffect(() => {
    void load(false);
  }, [queue, state]);

  // Unfinished jobs are followed live: their state, progress and end arrive over their event streams.
  const unfinished = (jobs ?? [])
    .filter((j) => j.state !== 'completed' && j.state !== 'failed')
    .slice(0, LIVE_LIMIT)
    .map((j) => j.id);
  const liveKey = unfinished.join(',');
  useEffect(() => {
    const update = (id: string, patch: Partial<Job>) => setJobs((list) => list?.map((j) => (j.id === id ? { ...j, ...patch } : j)) ?? null);
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
        <Field label={t('jobs.queue')}>
          <select name="queue" value={queue} onChange={(e) => setQueue(e.currentTarget.value)}>
            <option value="">{t('common.all')}</option>
            {QUEUES.map((q) => (
              <option key={q} value={q}>
                {q}
              </option>
            ))}
          </select>
        </Field>
        <Field label={t('jobs.state')}>
          <select name="state" value={state} onChange={(e) => setState(e.currentTarget.value)}>
            <option value="">{t('common.all')}</option>
            {STATES.map((s) => (
              <option key={s} value={s}>
                {t(jobStateKey(s))}
              </option>
            ))}
          </select>
        </Field>
        <button type="button" onClick={() => void load(false)}>
          {t('common.refresh')}
        </button>
      </div>
      <ErrorNote error={action.error} />
      {!jobs && action.busy && <Loading />}
      {jobs?.length === 0 && <Empty>{t('jobs.none')}</Empty>}
      {jobs && jobs.length > 0 && (
        <div class="table-wrap">
          <table data-testid="jobs-table">
            <thead>
              <tr>
                <th scope="col">{t('jobs.job')}</th>
                <th scope="col">{t('jobs.queue')}</th>
                <th scope="col">{t('jobs.state')}</th>
                <th scope="col">{t('jobs.progress')}</th>
                <th scope="col" class="num">
                  {t('jobs.attempts')}
                </th>
                <th scope="col">{t('jobs.created')}</th>
                <th scope="col">{t('jobs.finished')}</th>
              </tr>
            </thead>
            <tbody>
              {jobs.map((j) => {
                const pct = j.state === 'completed' ? 100 : progressOf(j.progress);
                return (
                  <Fragment key={j.id}>
                    <tr>
                      <td>
                        <button type="button" class="link" aria-expanded={openId === j.id} onClick={() => setOpenId(openId === j.id ? null : j.id)}>
                          {j.name}
                        </button>
                        <div class="muted small">
                          <code>{j.id}</code>
                        </div>
                      </td>
                      <td>{j.queue}</td>
                      <td>
                        <Badge tone={tone(j.state)}>{t(jobStateKey(j.state))}</Badge>
                      </td>
                      <td>{pct === null ? '—' : <progress max={100} value={pct} aria-label={`${pct}%`} />}</td>
                      <td class="num">{j.attempts}</td>
                      <td>{fmtDate(j.createdAt)}</td>
                      <td>{fmtDate(j.finishedAt) || '—'}</td>
                    </tr>
                    {openId === j.id && (
                      <tr class="detail">
                        <td colSpan={7}>
                          <JobDetail id={j.id} />
                        </td>
                      </tr>
                    )}
                  </Fragment>
                );
              })}
            </tbody>
          </table>
        </div>
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
