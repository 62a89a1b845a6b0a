// Following a job live over its server-sent events (/api/jobs/{id}/events), and job-backed calls that may answer 202.
import { ApiError, call } from './api';
import type { MessageKey } from './i18n';
import type { Accepted, Job, JobError } from './types';

export interface JobWatch {
  /** The job's result when it completes; an ApiError (the status the call would have had) when it fails. */
  done: Promise<unknown>;
  close: () => void;
}

/** Follows a job: `onState` with its status (first event), `onProgress` as it reports progress. */
export function watchJob(id: string, on: { onState?: (job: Job) => void; onProgress?: (progress: unknown) => void } = {}): JobWatch {
  const source = new EventSource(`/api/jobs/${encodeURIComponent(id)}/events`);
  let settle: { resolve: (v: unknown) => void; reject: (e: unknown) => void } | undefined;
  const done = new Promise<unknown>((resolve, reject) => {
    settle = { resolve, reject };
  });
  let finished = false;
  const finish = () => {
    finished = true;
    source.close();
  };
  const parse = (e: Event) => {
    try {
      return JSON.parse((e as MessageEvent<string>).data) as unknown;
    } catch {
      return undefined;
    }
  };
  source.addEventListener('state', (e) => on.onState?.(parse(e) as Job));
  source.addEventListener('progress', (e) => on.onProgress?.((parse(e) as { progress: unknown })?.progress));
  source.addEventListener('completed', (e) => {
    finish();
    settle!.resolve((parse(e) as { result: unknown })?.result);
  });
  source.addEventListener('failed', (e) => {
    finish();
    const err = (parse(e) as { error?: JobError })?.error;
    settle!.reject(new ApiError(err?.status ?? 500, err?.message ?? '', err?.code ?? undefined));
  });
  source.onerror = () => {
    // The stream ends after the final event; an error before it means the job is gone or the connection broke.
    if (finished) return;
    if (source.readyState === EventSource.CLOSED) {
      finished = true;
      settle!.reject(new ApiError(0, ''));
    }
  };
  return {
    done,
    close: () => {
      if (!finished) {
        finish();
        settle!.reject(new DOMException('closed', 'AbortError'));
      }
    },
  };
}

/**
 * A job-backed call: the answer when the server waited for the job, or (202, the wait ran out) the
 * job's result once its events say it completed.
 */
export async function jobCall<T>(path: string, body: unknown, onJob?: (id: string) => void): Promise<T> {
  const res = await call<T | Accepted>('POST', path, body);
  if (res.status !== 202) return res.data as T;
  const { jobId } = res.data as Accepted;
  onJob?.(jobId);
  return (await watchJob(jobId).done) as T;
}

/** A job state in people's words. */
export const jobStateKey = (state: string): MessageKey =>
  (['waiting', 'active', 'delayed', 'completed', 'failed', 'cancelled', 'sending'].includes(state)
    ? `jobs.state.${state}`
    : 'jobs.state.waiting') as MessageKey;
