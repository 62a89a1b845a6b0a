// `rotate-secret-key`: every value sealed or signed under the previous key sealed or signed again under SECRET_KEY —
// Postgres' sealed columns (src/sealed-values.ts), then in Redis the job schedulers' templates, the jobs not yet ended
// or failed (sealed payloads and envelope signatures) and the answers kept for Idempotency-Key replays. Each value
// is rewritten alone and only if it is still the one read: stopped anywhere, nothing is lost (every value is under one
// of the two keys, and processes started with both accept either), and a run again carries on where it stopped.
import type { Job } from 'bullmq';
import { queueNames } from '../config.js';
import { type JobEnvelope, schedulerSignedId, signedIdOf, signedWithCurrentKey, signEnvelope, verifyEnvelope } from '../jobs/wire.js';
import type { Platform } from '../platform.js';
import type { Redis } from '../redis.js';
import { type ResealReport, resealStoredValues } from '../sealed-values.js';
import type { Secrets } from '../secrets.js';
import { syncSchedulers } from '../schedules/service.js';
import { keysOfPattern, scanKeys } from './scan.js';

export interface Tally {
  resealed: number;
  current: number;
  /** What no accepted key opens (left as it is): its place, for the report. */
  unreadable: string[];
}

export interface RotationReport {
  postgres: ResealReport;
  schedulers: Tally;
  jobs: Tally;
  idempotency: Tally;
}

const tally = (): Tally => ({ resealed: 0, current: 0, unreadable: [] });

/** The job states whose jobs may still run: waiting in any way, running, or failed (an admin may retry one). */
const LIVE_STATES = ['waiting', 'prioritized', 'delayed', 'waiting-children', 'active', 'failed'] as const;
const PAGE = 500;

type RotationSecrets = Pick<Secrets, 'encrypt' | 'decrypt' | 'isCurrent' | 'signJob' | 'verifyJob'>;

/** The envelope sealed and signed under SECRET_KEY, or 'current' when it is already, or 'unreadable'. */
function resealEnvelope(secrets: RotationSecrets, signedId: string, name: string, data: JobEnvelope): JobEnvelope | 'current' | 'unreadable' {
  const sealedCurrent = data.sealed === undefined || secrets.isCurrent(data.sealed);
  if (sealedCurrent && signedWithCurrentKey(secrets, signedId, name, data)) return 'current';
  // Signed by neither key: not a job the API made (workers refuse it); left alone.
  if (!verifyEnvelope(secrets, signedId, name, data)) return 'unreadable';
  const next: JobEnvelope = { ...data };
  if (!sealedCurrent) {
    try {
      // Assigned in place: the fields keep their order, which the signature covers.
      next.sealed = secrets.encrypt(secrets.decrypt(data.sealed!));
    } catch {
      return 'unreadable';
    }
  }
  signEnvelope(secrets, signedId, name, next);
  return next;
}

async function rotateSchedulers(p: Platform, dryRun: boolean): Promise<Tally> {
  const t = tally();
  const queue = p.jobs.queues.get('schedules')!;
  const schedulers = await queue.getJobSchedulers(0, -1);
  for (const s of schedulers) {
    const data = s.template?.data as JobEnvelope | undefined;
    if (!data || !s.template) continue;
    const done = resealEnvelope(p.secrets, schedulerSignedId(s.key), s.name, data);
    if (done === 'current') t.current++;
    else if (done === 'unreadable') t.unreadable.push(`scheduler ${s.key}`);
    else t.resealed++;
  }
  // Every enabled schedule's template signed again (as an API process does when it starts; each keeps its next tick).
  if (!dryRun && t.resealed) await syncSchedulers(p);
  return t;
}

async function rotateJobs(p: Platform, dryRun: boolean, onPage: () => void): Promise<Tally> {
  const t = tally();
  for (const name of queueNames) {
    const queue = p.jobs.queues.get(name)!;
    for (const state of LIVE_STATES) {
      for (let start = 0; ; start += PAGE) {
        const jobs = (await queue.getJobs(state, start, start + PAGE - 1, true)) as Job<JobEnvelope>[];
        for (const job of jobs.filter(Boolean)) {
          if (!job.data || typeof job.data !== 'object') continue;
          const done = resealEnvelope(p.secrets, signedIdOf(job), job.name, job.data);
          if (done === 'current') t.current++;
          else if (done === 'unreadable') t.unreadable.push(`job ${name}/${job.id}`);
          else {
            t.resealed++;
            // A job removed meanwhile (it ended and was trimmed) has nothing left to rotate.
            if (!dryRun) await job.updateData(done).catch((err: Error) => (/Missing key|does not exist/i.test(err.message) ? undefined : Promise.reject(err)));
          }
        }
        onPage();
        if (jobs.length < PAGE) break;
      }
    }
  }
  return t;
}

// KEYS[1] the record; ARGV: what was read, what replaces it. Replaced only if unchanged, keeping its time to live.
const SWAP = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL') end return 0`;

/** The answers kept for Idempotency-Key replays (src/http/idempotency.ts): their sealed body (b) and error (e). */
async function rotateIdempotency(p: Platform, dryRun: boolean): Promise<Tally> {
  const t = tally();
  const redis: Redis = p.redis;
  for await (const key of scanKeys(redis, keysOfPattern(p.keys, 'idempotency'))) {
    const raw = await redis.get(key);
    if (!raw) continue;
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(raw);
    } catch {
      continue;
    }
    const sealed = (['b', 'e'] as const).filter((f) => typeof record[f] === 'string' && !p.secrets.isCurrent(record[f] as string));
    if (sealed.length === 0) {
      t.current++;
      continue;
    }
    try {
      for (const f of sealed) record[f] = p.secrets.encrypt(p.secrets.decrypt(record[f] as string));
    } catch {
      t.unreadable.push(`idempotency record ${key}`);
      continue;
    }
    t.resealed++;
    if (!dryRun) await redis.eval(SWAP, 1, key, raw, JSON.stringify(record));
  }
  return t;
}

/** Everything under SECRET_KEY again (with dryRun, only counted). `note` hears about progress. */
export async function rotateAll(p: Platform, opts: { dryRun: boolean; note: (line: string) => void }): Promise<RotationReport> {
  let last = 0;
  const progress = (what: string) => {
    if (Date.now() - last < 1_000) return;
    last = Date.now();
    opts.note(what);
  };
  const postgres = await resealStoredValues(p.db, p.secrets, {
    dryRun: opts.dryRun,
    onProgress: (table, r) => progress(`postgres: ${table}, ${r.resealed} sealed again so far`),
  });
  const schedulers = await rotateSchedulers(p, opts.dryRun);
  const jobs = await rotateJobs(p, opts.dryRun, () => progress('redis: jobs…'));
  const idempotency = await rotateIdempotency(p, opts.dryRun);
  return { postgres, schedulers, jobs, idempotency };
}

/** What is still to do (or could not be done) after a report. */
export const leftOver = (r: RotationReport) => ({
  unreadable: [
    ...r.postgres.unreadable.map((u) => `${u.table}.${u.column} of row ${u.key.join('/')}`),
    ...r.schedulers.unreadable,
    ...r.jobs.unreadable,
    ...r.idempotency.unreadable,
  ],
  resealed: r.postgres.resealed + r.schedulers.resealed + r.jobs.resealed + r.idempotency.resealed,
});
