// `export` and `import`: users, API keys, channels and content items as JSON lines, to move them to another deployment.
// Users keep their password hashes and keys their hashes (what Postgres holds: no key or password is in the file);
// channels carry their upstream key in the clear, since the other deployment's SECRET_KEY is not this one's. The first
// line says what the file is; then one line per row, users first (the other rows name their user by the old id).
import fs from 'node:fs';
import readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import type { Db } from '../db.js';
import { status as apiStatus } from '../logs/service.js';
import type { Platform } from '../platform.js';
import { CliError } from './context.js';

export const EXPORT_FORMAT = 'switchyard-export';
export const EXPORT_VERSION = 1;

type Row = Record<string, unknown>;
type Kind = 'user' | 'token' | 'channel' | 'content';

/** What is exported, in this order, and the column rows are walked by. */
const TABLES: { kind: Kind; table: string; key: string }[] = [
  { kind: 'user', table: 'users', key: 'id' },
  { kind: 'token', table: 'tokens', key: 'id' },
  { kind: 'channel', table: 'channels', key: 'id' },
  { kind: 'content', table: 'content_items', key: 'id' },
];

const PAGE = 500;

export type Counts = Record<Kind, number>;
const zero = (): Counts => ({ user: 0, token: 0, channel: 0, content: 0 });

/** Opens the file to write (`-`: standard output): created for its owner only, never over an existing file. */
export function openOutput(file: string | undefined): Writable {
  if (!file) throw new CliError('--out: name the file to write (or - for standard output)', 2);
  if (file === '-') return process.stdout;
  try {
    return fs.createWriteStream('', { fd: fs.openSync(file, 'wx', 0o600) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new CliError(`${file} exists already: name a new file`);
    throw err;
  }
}

const write = (out: Writable, line: string) => new Promise<void>((resolve, reject) => out.write(`${line}\n`, (err) => (err ? reject(err) : resolve())));

/** Writes every user, key, channel and content item; returns how many of each, and the channels whose key would not open. */
export async function exportAll(p: Platform, out: Writable): Promise<{ counts: Counts; keyless: number[] }> {
  const counts = zero();
  const keyless: number[] = [];
  await write(
    out,
    JSON.stringify({ format: EXPORT_FORMAT, version: EXPORT_VERSION, exported_at: new Date().toISOString(), switchyard: apiStatus(p.config).version }),
  );
  for (const t of TABLES) {
    let after: unknown;
    for (;;) {
      const q = p.db(t.table).select('*').orderBy(t.key).limit(PAGE);
      if (after !== undefined) q.where(t.key, '>', after as string);
      const rows: Row[] = await q;
      for (const row of rows) {
        if (t.kind === 'channel') {
          const { key_enc, ...rest } = row;
          let key: string | null = null;
          try {
            key = p.secrets.decrypt(key_enc as string);
          } catch {
            keyless.push(row.id as number);
          }
          await write(out, JSON.stringify({ type: t.kind, row: { ...rest, key } }));
        } else await write(out, JSON.stringify({ type: t.kind, row }));
        counts[t.kind]++;
      }
      if (rows.length < PAGE) break;
      after = rows[rows.length - 1]![t.key];
    }
  }
  if (out !== process.stdout) await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
  return { counts, keyless };
}

export interface ImportReport {
  /** Rows added. */
  added: Counts;
  /** Rows already there (the same username, key, channel or content url), left as they were. */
  kept: Counts;
  /** Rows that could not be added, and why. */
  skipped: string[];
}

/** The columns a table has here: a file from another version may carry more (dropped) or fewer (their defaults). */
async function columnsOf(db: Db, table: string): Promise<Set<string>> {
  return new Set(Object.keys(await db(table).columnInfo()));
}

const pick = (row: Row, columns: Set<string>, drop: string[] = []) =>
  Object.fromEntries(Object.entries(row).filter(([k]) => columns.has(k) && !drop.includes(k)));

/**
 * Adds what the file holds, in one transaction (a file that fails half way adds nothing). A user whose username is
 * taken here is this deployment's (the rows naming them are theirs from now on); a key whose hash is here already, a
 * channel of the same type, name and address, a content item of the same url: kept as they are here.
 */
export async function importAll(p: Platform, input: Readable): Promise<ImportReport> {
  const report: ImportReport = { added: zero(), kept: zero(), skipped: [] };
  const users = new Map<number, number>();
  let header = false;
  let n = 0;
  await p.db.transaction(async (trx) => {
    const columns = {} as Record<Kind, Set<string>>;
    for (const t of TABLES) columns[t.kind] = await columnsOf(trx, t.table);
    // Read from here on (lines that came before the loop asked for them would be lost).
    for await (const line of readline.createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY })) {
      n++;
      if (!line.trim()) continue;
      let item: { type?: unknown; row?: Row; format?: unknown; version?: unknown };
      try {
        item = JSON.parse(line);
      } catch {
        throw new CliError(`line ${n} is not JSON: not a file written by switchyard export`);
      }
      if (!header) {
        if (item.format !== EXPORT_FORMAT)
          throw new CliError('the first line does not say format "switchyard-export": not a file written by switchyard export');
        if (item.version !== EXPORT_VERSION)
          throw new CliError(`the file is of version ${String(item.version)}; this Switchyard reads version ${EXPORT_VERSION}`);
        header = true;
        continue;
      }
      const row = item.row;
      if (!row || typeof row !== 'object') throw new CliError(`line ${n} has no row`);
      switch (item.type) {
        case 'user':
          await importUser(trx, row, columns.user, users, report);
          break;
        case 'token':
          await importToken(trx, row, columns.token, users, report);
          break;
        case 'channel':
          await importChannel(p, trx, row, columns.channel, users, report);
          break;
        case 'content':
          await importContent(trx, row, columns.content, users, report);
          break;
        default:
          throw new CliError(`line ${n}: unknown type ${JSON.stringify(item.type)}`);
      }
    }
    if (!header) throw new CliError('the file is empty');
  });
  return report;
}

async function importUser(db: Db, row: Row, columns: Set<string>, users: Map<number, number>, report: ImportReport) {
  const name = String(row.username ?? '');
  const here = await db('users').whereRaw('lower(username) = lower(?)', [name]).first('id');
  if (here) {
    users.set(row.id as number, here.id);
    report.kept.user++;
    return;
  }
  const values = pick(row, columns, ['id']);
  // A system access token's hash belongs to one user: another here has it, this one goes without.
  if (values.access_token_hash && (await db('users').where({ access_token_hash: values.access_token_hash }).first('id'))) values.access_token_hash = null;
  const [added] = await db('users').insert(values).returning('id');
  users.set(row.id as number, added.id);
  report.added.user++;
}

async function importToken(db: Db, row: Row, columns: Set<string>, users: Map<number, number>, report: ImportReport) {
  const userId = users.get(row.user_id as number);
  if (userId === undefined) {
    report.skipped.push(`key ${String(row.name)} (#${String(row.id)}): its user is not in the file`);
    return;
  }
  if (await db('tokens').where({ key_hash: row.key_hash }).first('id')) {
    report.kept.token++;
    return;
  }
  await db('tokens').insert({ ...pick(row, columns, ['id']), user_id: userId });
  report.added.token++;
}

async function importChannel(p: Platform, db: Db, row: Row, columns: Set<string>, users: Map<number, number>, report: ImportReport) {
  if (typeof row.key !== 'string') {
    report.skipped.push(`channel ${String(row.name)} (#${String(row.id)}): its key did not open where it was exported`);
    return;
  }
  if (await db('channels').where({ type: row.type, name: row.name, base_url: row.base_url }).first('id')) {
    report.kept.channel++;
    return;
  }
  const createdBy = row.created_by == null ? null : (users.get(row.created_by as number) ?? null);
  await db('channels').insert({
    ...pick(row, columns, ['id', 'key']),
    key_enc: p.secrets.encrypt(row.key),
    ...(columns.has('created_by') ? { created_by: createdBy } : {}),
  });
  report.added.channel++;
}

async function importContent(db: Db, row: Row, columns: Set<string>, users: Map<number, number>, report: ImportReport) {
  if (
    await db('content_items')
      .where({ url_key: row.url_key ?? row.url })
      .orWhere({ id: row.id })
      .first('id')
  ) {
    report.kept.content++;
    return;
  }
  const createdBy = row.created_by == null ? null : (users.get(row.created_by as number) ?? null);
  await db('content_items').insert({ ...pick(row, columns), ...(columns.has('created_by') ? { created_by: createdBy } : {}) });
  report.added.content++;
}
