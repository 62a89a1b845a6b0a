// Measures the verification-code extractor on the regression corpus (test/fixtures/code-corpus.ts, which the rules
// were tuned on), on the held-out set (test/fixtures/code-heldout.ts, which they never were), on the world held-out
// set (test/fixtures/code-heldout-world.ts, issue 27: 38 languages neither the rules nor the first held-out set name,
// committed before the extractor changed and never tuned on), on the fresh held-out set (test/fixtures/
// code-heldout-fresh.ts, issue 27: 35 more languages none of those name, written after the world set's misses had been
// seen while tuning, committed before the next extractor change and never tuned on), on the third held-out set
// (test/fixtures/code-heldout-third.ts, issue 27: 34 more languages none of those name, committed before the round of
// extractor changes after the fresh set's and never tuned on), separately, and on the union.
// precision = correct codes / codes returned; recall = correct codes / messages with a code; a wrong code counts
// against both. Run: npm run eval:codes
import { type FoundCode, extractCode } from '../src/mail/codes.js';
import { type CorpusMessage, corpus } from '../test/fixtures/code-corpus.js';
import { heldout } from '../test/fixtures/code-heldout.js';
import { heldoutFresh } from '../test/fixtures/code-heldout-fresh.js';
import { heldoutThird } from '../test/fixtures/code-heldout-third.js';
import { heldoutWorld } from '../test/fixtures/code-heldout-world.js';

/** The sets measured, by name: tests take the held-out sets from here, so they score them without opening them. */
export const codeSets = { corpus, heldout, heldoutWorld, heldoutFresh, heldoutThird } as const;

export interface CodeScore {
  messages: number;
  withCode: number;
  returned: number;
  correct: number;
  precision: number;
  recall: number;
  misses: string[];
  falsePositives: string[];
}

export function scoreCodes(messages: CorpusMessage[], extract: (m: CorpusMessage) => FoundCode | null = defaultExtract): CodeScore {
  let withCode = 0;
  let returned = 0;
  let correct = 0;
  const misses: string[] = [];
  const falsePositives: string[] = [];
  for (const m of messages) {
    const got = extract(m)?.code ?? null;
    if (m.expected !== null) withCode++;
    if (got !== null) returned++;
    if (got !== null && got === m.expected) correct++;
    if (m.expected !== null && got !== m.expected) misses.push(`${m.name}: expected ${m.expected}, got ${got ?? 'null'}`);
    if (got !== null && got !== m.expected) falsePositives.push(`${m.name}: expected ${m.expected ?? 'null'}, got ${got}`);
  }
  return {
    messages: messages.length,
    withCode,
    returned,
    correct,
    precision: returned ? correct / returned : 1,
    recall: withCode ? correct / withCode : 1,
    misses,
    falsePositives,
  };
}

function defaultExtract(m: CorpusMessage): FoundCode | null {
  return extractCode({ subject: m.subject, text: m.text, html: m.html });
}

export function formatScore(s: CodeScore): string {
  return `precision ${s.precision.toFixed(3)} (${s.correct}/${s.returned}), recall ${s.recall.toFixed(3)} (${s.correct}/${s.withCode})`;
}

/** A held-out set's figures only: naming its misses would show whoever tunes the rules what to fit (EVAL_SHOW_HELDOUT=1 shows them). */
function report(label: string, s: CodeScore, heldOut = false): void {
  console.log(`\n${label}: ${s.messages} messages, ${s.withCode} with a code — ${formatScore(s)}`);
  if (heldOut && process.env.EVAL_SHOW_HELDOUT !== '1') {
    console.log(`  ${s.misses.length} misses, ${s.falsePositives.length} wrong codes (not listed: a held-out set)`);
    return;
  }
  console.log(`  misses (${s.misses.length}):`);
  for (const line of s.misses) console.log(`    - ${line}`);
  console.log(`  false positives / wrong codes (${s.falsePositives.length}):`);
  for (const line of s.falsePositives) console.log(`    - ${line}`);
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  report('regression corpus (test/fixtures/code-corpus.ts, tuned on)', scoreCodes(corpus));
  report('held-out set (test/fixtures/code-heldout.ts, never tuned on)', scoreCodes(heldout), true);
  report('world held-out set (test/fixtures/code-heldout-world.ts, never tuned on)', scoreCodes(heldoutWorld), true);
  report('fresh held-out set (test/fixtures/code-heldout-fresh.ts, written before the next extractor change, never tuned on)', scoreCodes(heldoutFresh), true);
  report('third held-out set (test/fixtures/code-heldout-third.ts, written before the next extractor change, never tuned on)', scoreCodes(heldoutThird), true);
  report('union of the five', scoreCodes([...corpus, ...heldout, ...heldoutWorld, ...heldoutFresh, ...heldoutThird]), true);
  console.log(`\n${new Date().toISOString().slice(0, 10)}`);
}
