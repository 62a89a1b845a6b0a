// The values Postgres keeps sealed with SECRET_KEY (src/secrets.ts): where they are, whether the key opens them, and
// sealing them again under a new key, row by row (npx switchyard rotate-secret-key). What Redis keeps sealed or signed
// (jobs, idempotent answers) is the CLI's to re-seal (src/cli/rotate.ts).
import type { Db } from './db.js';
import type { Secrets } from './secrets.js';

export interface SealedColumns {
  table: string;
  /** The primary key's columns, in order (rows are walked by it). */
  key: readonly string[];
  /** The sealed columns (null where the row has none). */
  columns: readonly string[];
  /** What they are, for people. */
  what: string;
}

/** Every column that holds a value sealed with SECRET_KEY (test/unit/sealed-sites.test.ts holds the code to this list). */
export const SEALED_IN_POSTGRES: readonly SealedColumns[] = [
  { table: 'channels', key: ['id'], columns: ['key_enc'], what: 'channel keys' },
  { table: 'mail_accounts', key: ['id'], columns: ['secret_enc'], what: 'mail account passwords and refresh tokens' },
  { table: 'webhook_endpoints', key: ['id'], columns: ['secret_enc', 'previous_secret_enc'], what: 'webhook signing secrets' },
  { table: 'batch_requests', key: ['batch_id', 'line'], columns: ['request'], what: "batches' requests" },
];

/**
 * Whether the keys open what is stored: the newest sealed value of each column is tried. A problem when there are
 * values and not one opens (every one was sealed with another key); undefined otherwise.
 */
export async function storedValuesProblem(db: Db, secrets: Pick<Secrets, 'decrypt'>): Promise<{ tried: string[] } | undefined> {
  const tried: string[] = [];
  for (const t of SEALED_IN_POSTGRES) {
    for (const column of t.columns) {
      const row = await db(t.table)
        .whereNotNull(column)
        .orderBy(t.key.map((k) => ({ column: k, order: 'desc' })))
        .first(column);
      if (!row) continue;
      try {
        secrets.decrypt(row[column]);
        return undefined;
      } catch {
        tried.push(t.what);
      }
    }
  }
  return tried.length ? { tried: [...new Set(tried)] } : undefined;
}

export interface ResealReport {
  /** Values sealed again under SECRET_KEY (or, with dryRun, that would be). */
  resealed: number;
  /** Values already under SECRET_KEY. */
  current: number;
  /** Values neither key opens: left as they are. */
  unreadable: { table: string; column: string; key: unknown[] }[];
}

const PAGE = 200;

/**
 * Seals every stored value that SECRET_KEY does not open again under SECRET_KEY (opening it with the previous key),
 * one row at a time, each its own statement: stopped anywhere, nothing is lost (every value is under one of the two
 * keys) and a run again carries on, finding the values done by then already current. A row changed meanwhile (a
 * process sealed a new value, under SECRET_KEY) is left as it is.
 */
export async function resealStoredValues(
  db: Db,
  secrets: Pick<Secrets, 'decrypt' | 'encrypt' | 'isCurrent'>,
  opts: { dryRun?: boolean; onProgress?: (table: string, report: ResealReport) => void } = {},
): Promise<ResealReport> {
  const report: ResealReport = { resealed: 0, current: 0, unreadable: [] };
  for (const t of SEALED_IN_POSTGRES) {
    let after: unknown[] | undefined;
    for (;;) {
      const q = db(t.table)
        .select([...t.key, ...t.columns])
        .orderBy([...t.key])
        .limit(PAGE);
      if (after) q.whereRaw(`(${t.key.map(() => '??').join(', ')}) > (${after.map(() => '?').join(', ')})`, [...t.key, ...after] as never[]);
      const rows: Record<string, unknown>[] = await q;
      for (const row of rows) {
        const key = t.key.map((k) => row[k]);
        for (const column of t.columns) {
          const sealed = row[column];
          if (typeof sealed !== 'string') continue;
          if (secrets.isCurrent(sealed)) {
            report.current++;
            continue;
          }
          let plain: string;
          try {
            plain = secrets.decrypt(sealed);
          } catch {
            report.unreadable.push({ table: t.table, column, key });
            continue;
          }
          report.resealed++;
          if (opts.dryRun) continue;
          const where = Object.fromEntries(t.key.map((k, i) => [k, key[i]]));
          await db(t.table)
            .where({ ...where, [column]: sealed })
            .update({ [column]: secrets.encrypt(plain) });
        }
        opts.onProgress?.(t.table, report);
      }
      if (rows.length < PAGE) break;
      after = t.key.map((k) => rows[rows.length - 1]![k]);
    }
  }
  return report;
}
