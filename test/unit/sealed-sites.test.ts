// Every place the code seals or signs with SECRET_KEY is one a key rotation knows: a new one fails here until
// `npx switchyard rotate-secret-key` re-seals what it writes (src/sealed-values.ts for Postgres, src/cli/rotate.ts for Redis).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SEALED_IN_POSTGRES } from '../../src/sealed-values.js';
import { ROOT_DIR } from '../helpers/spawn.js';

/** Each file that seals or signs, and what of it the rotation re-seals. */
const KNOWN: Record<string, string> = {
  'src/channels/store.ts': 'channels.key_enc',
  'src/mail/store.ts': 'mail_accounts.secret_enc',
  'src/webhooks/store.ts': 'webhook_endpoints.secret_enc, webhook_endpoints.previous_secret_enc',
  'src/batches/run.ts': 'batch_requests.request',
  'src/jobs/client.ts': "jobs in Redis: their sealed payloads and their envelopes' signatures",
  'src/schedules/service.ts': "job schedulers' templates in Redis (signed)",
  'src/http/idempotency.ts': 'answers kept for Idempotency-Key replays in Redis',
  'src/sealed-values.ts': 'the rotation itself',
};

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(path.join(ROOT_DIR, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(rel));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(rel);
  }
  return out;
}

describe('what SECRET_KEY seals or signs', () => {
  it('is sealed or signed only in files whose values the key rotation re-seals', () => {
    const sites = sources('src')
      .concat(sources('workers'))
      .filter((f) => f !== 'src/secrets.ts' && !f.includes('/cli/'))
      .filter((f) => /\.encrypt\(|signEnvelope\(|\.signJob\(/.test(fs.readFileSync(path.join(ROOT_DIR, f), 'utf8')))
      .filter((f) => f !== 'src/jobs/wire.ts'); // signEnvelope's own definition
    expect(sites.sort()).toEqual(Object.keys(KNOWN).sort());
  });

  it('every Postgres column the stores seal is in SEALED_IN_POSTGRES', () => {
    const listed = SEALED_IN_POSTGRES.flatMap((t) => t.columns.map((c) => `${t.table}.${c}`)).sort();
    const named = Object.values(KNOWN)
      .flatMap((v) => v.split(', '))
      .filter((v) => /^\w+\.\w+$/.test(v))
      .sort();
    expect(listed).toEqual(named);
    // And each store writes that column through encrypt (previous_secret_enc is secret_enc moved aside on a rotation).
    for (const [file, what] of Object.entries(KNOWN)) {
      const text = fs.readFileSync(path.join(ROOT_DIR, file), 'utf8');
      for (const v of what.split(', ').filter((x) => /^\w+\.\w+$/.test(x))) {
        const column = v.split('.')[1]!;
        expect(text.includes(column) || column === 'previous_secret_enc', `${file} writes ${column}`).toBe(true);
      }
    }
  });
});
