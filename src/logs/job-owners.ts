// Who submitted which job: one row per job a user submits (written before it is queued), so GET /api/jobs lists a user's jobs by index.
import type { Db } from '../db.js';

export interface JobOwnerRow {
  seq: number;
  job_id: string;
  owner_id: number;
  queue: string;
  name: string;
  created_at: Date;
}

export async function recordJobOwner(db: Db, job: { jobId: string; ownerId: number; queue: string; name: string }): Promise<void> {
  await db('job_owners').insert({ job_id: job.jobId, owner_id: job.ownerId, queue: job.queue, name: job.name }).onConflict('job_id').ignore();
}

/** A user's jobs, newest first, after the keyset cursor `beforeSeq`. */
export async function listJobOwners(db: Db, f: { ownerId: number; queue?: string; name?: string; beforeSeq?: number; limit: number }): Promise<JobOwnerRow[]> {
  const q = db<JobOwnerRow>('job_owners').where('owner_id', f.ownerId);
  if (f.queue) q.where('queue', f.queue);
  if (f.name) q.where('name', f.name);
  if (f.beforeSeq !== undefined) q.where('seq', '<', f.beforeSeq);
  return q.orderBy('seq', 'desc').limit(f.limit);
}

/** Jobs BullMQ no longer has (trimmed by retention): their rows go. */
export async function forgetJobs(db: Db, jobIds: string[]): Promise<void> {
  if (jobIds.length) await db('job_owners').whereIn('job_id', jobIds).delete();
}

/** Rows older than any job is kept (JOB_KEEP_FAILED_SECONDS is the longest retention). */
export async function pruneJobOwners(db: Db, olderThanSeconds: number): Promise<number> {
  return db('job_owners')
    .where('created_at', '<', new Date(Date.now() - olderThanSeconds * 1000))
    .delete();
}
