// The first example of docs/embeddings.md shows the usage its call answers with: the prompt tokens the gateway counts
// for the example's own inputs (a reader once found 7 where the answer says 6).
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { countInputs } from '../../src/embeddings/input-limits.js';

const doc = fs.readFileSync(new URL('../../docs/embeddings.md', import.meta.url), 'utf8');

describe('docs/embeddings.md, first example', () => {
  it('shows the prompt tokens its inputs count', async () => {
    const body = JSON.parse(/-d '(\{"model":"local-hash-v1"[^']*\})'/.exec(doc)![1]!) as { input: string[] };
    const shown = /"usage":\{"prompt_tokens":(\d+),"total_tokens":(\d+)\}/.exec(doc)!;
    const counted = (await countInputs(body.input, null)).reduce((a, b) => a + b, 0);
    expect(Number(shown[1])).toBe(counted);
    expect(Number(shown[2])).toBe(counted);
  });
});
