// A content batch: each entry validated on its own, repeated urls refused, the rest in one upsert.
import type { Db } from '../db.js';
import { stopIfCancelled } from '../jobs/cancel.js';
import { checkItem, DUPLICATE_IN_BATCH, NOT_OWNER_UPSERT, type BatchResult, type NewItem } from './schema.js';
import { upsertItems, type Caller } from './store.js';

/**
 * A cancel (`signal`, DELETE /api/jobs/{id}) is heard before the upsert, never during it: the batch then writes nothing.
 * `progress` hears 50 once every entry is checked, 100 once the rows are written. Bad entries fail
 * on their own (never the batch, never a retry); so do urls of other users' items when `caller` is
 * not an admin: the upsert skips them and they are reported, the rest are written.
 */
export async function runBatch(
  db: Db,
  rawItems: unknown[],
  caller: Caller,
  progress?: (percent: number) => Promise<void>,
  signal?: AbortSignal,
): Promise<BatchResult> {
  const errors: BatchResult['errors'] = [];
  const valid: { index: number; item: NewItem }[] = [];
  const seen = new Set<string>();
  rawItems.forEach((raw, index) => {
    const check = checkItem(raw);
    if (!check.ok) errors.push({ index, url: check.url ?? 'unknown', error: check.error });
    else if (seen.has(check.item.urlKey)) errors.push({ index, url: check.item.url, error: DUPLICATE_IN_BATCH });
    else {
      seen.add(check.item.urlKey);
      valid.push({ index, item: check.item });
    }
  });
  await progress?.(50);
  stopIfCancelled(signal);
  // Upserting by url makes a re-run (after a crashed worker) write the same rows again, not new ones.
  const rows = await upsertItems(
    db,
    valid.map((v) => v.item),
    caller,
  );
  const idByUrl = new Map(rows.map((r) => [r.url_key, r.id]));
  const created: BatchResult['created'] = [];
  for (const v of valid) {
    const id = idByUrl.get(v.item.urlKey);
    if (id) created.push({ index: v.index, id, url: v.item.url });
    else errors.push({ index: v.index, url: v.item.url, error: NOT_OWNER_UPSERT });
  }
  errors.sort((a, b) => a.index - b.index);
  await progress?.(100);
  return { success: created.length, failed: errors.length, total: rawItems.length, errors, created };
}
