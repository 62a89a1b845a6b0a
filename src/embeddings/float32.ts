// Printing float32 vectors as JSON: each number is the shortest decimal that reads back as the same float32.
//
// JavaScript prints numbers as float64, so a float32 such as 0.6f (0.60000002384185791015625) comes out as
// 0.6000000238418579 — 17 digits, and a different number from the 0.6 an upstream sent. OpenAI prints
// float32 (-0.0069292835), and so do we: a relayed vector comes back exactly as the upstream wrote it
// (when it was a float32 to begin with), and a 1536-float answer is ~40% smaller.
//
// A vector is written as ASCII bytes straight into a buffer, digit by digit from an integer: no number is
// converted to a string and no strings are joined (a 1536-float vector in ~100 µs on this
// project's bench machine, where converting each to a string and joining them took ~190 µs).

// Powers of ten that are exact doubles: a p-digit integer times or divided by one is one correctly rounded
// operation, so the double it gives is the decimal's own nearest double (the classic strtod fast path).
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);
const LOG10_2 = Math.log10(2);

/** By trying 1, 2, … 9 significant digits: slow, but exact for every float32 (used off the fast path). */
function shortestByPrecision(x: number): string {
  for (let p = 1; p < 9; p++) {
    const d = Number(x.toPrecision(p));
    if (Math.fround(d) === x) return String(d);
  }
  return String(Number(x.toPrecision(9)));
}

/** m (at most 9 digits) when m × 10^k reads back as `ax`, else -1. */
function mantissaAt(ax: number, k: number): number {
  if (k >= 0) {
    const m = Math.round(ax / POW10[k]!);
    return Math.fround(m * POW10[k]!) === ax ? m : -1;
  }
  const m = Math.round(ax * POW10[-k]!);
  return Math.fround(m / POW10[-k]!) === ax ? m : -1;
}

const ZERO = 0x30;
const digitsScratch = new Uint8Array(10);
/** "00" to "99" as ASCII, two bytes each. */
const PAIRS = Uint8Array.from({ length: 200 }, (_, i) => ZERO + (i % 2 === 0 ? Math.floor(i / 20) : (i >> 1) % 10));
// The float32's own bits, for its binary exponent.
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/**
 * Writes m × 10^exp as JavaScript writes a number (so as JSON; ECMAScript's Number::toString), m an
 * integer of at most 9 digits without trailing zeros. Returns the new end.
 */
function writeDecimal(out: Uint8Array, at: number, m: number, exp: number): number {
  let k = 0;
  // Digits, last first.
  // Two digits a division while there are more than two (m < 10^9 < 2^31: int32 arithmetic).
  while (m >= 100) {
    const q = (m / 100) | 0;
    const r = (m - q * 100) * 2;
    digitsScratch[k++] = PAIRS[r + 1]!;
    digitsScratch[k++] = PAIRS[r]!;
    m = q;
  }
  if (m >= 10) {
    digitsScratch[k++] = ZERO + (m % 10);
    digitsScratch[k++] = ZERO + ((m / 10) | 0);
  } else digitsScratch[k++] = ZERO + m;
  const n = k + exp; // where the decimal point goes
  if (k <= n && n <= 21) {
    for (let i = k - 1; i >= 0; i--) out[at++] = digitsScratch[i]!;
    for (let i = 0; i < n - k; i++) out[at++] = ZERO;
  } else if (0 < n && n <= 21) {
    for (let i = k - 1; i >= k - n; i--) out[at++] = digitsScratch[i]!;
    out[at++] = 0x2e; // .
    for (let i = k - n - 1; i >= 0; i--) out[at++] = digitsScratch[i]!;
  } else if (-6 < n && n <= 0) {
    out[at++] = ZERO;
    out[at++] = 0x2e;
    for (let i = 0; i < -n; i++) out[at++] = ZERO;
    for (let i = k - 1; i >= 0; i--) out[at++] = digitsScratch[i]!;
  } else {
    out[at++] = digitsScratch[k - 1]!;
    if (k > 1) {
      out[at++] = 0x2e;
      for (let i = k - 2; i >= 0; i--) out[at++] = digitsScratch[i]!;
    }
    out[at++] = 0x65; // e
    let e = n - 1;
    out[at++] = e < 0 ? 0x2d : 0x2b; // - or +
    if (e < 0) e = -e;
    if (e >= 10) out[at++] = ZERO + Math.floor(e / 10);
    out[at++] = ZERO + (e % 10);
  }
  return at;
}

function writeAscii(out: Uint8Array, at: number, s: string): number {
  for (let i = 0; i < s.length; i++) out[at++] = s.charCodeAt(i);
  return at;
}

/**
 * Writes the shortest decimal that parses (as a double, then rounded to float32) back to `x`, which must
 * be a finite float32 value. Nine significant digits always suffice; vectors' values mostly need 8 or 9
 * (and more digits never read back worse than fewer). Returns the new end.
 */
function writeFloat32(out: Uint8Array, at: number, x: number): number {
  if (x === 0) {
    if (Object.is(x, -0)) out[at++] = 0x2d;
    out[at++] = ZERO;
    return at;
  }
  if (!Number.isFinite(x)) throw new RangeError(`not a finite number: ${x}`);
  const ax = Math.abs(x);
  // The decimal exponent from the binary one (2^b <= ax < 2^(b+1)), corrected by one where a power of ten lies between.
  f32[0] = ax;
  let e = Math.floor((((u32[0]! >>> 23) & 0xff) - 127) * LOG10_2);
  if (e > -22 && e < 21) {
    const pow = e + 1 >= 0 ? POW10[e + 1]! : 1 / POW10[-(e + 1)]!;
    if (ax >= pow) e++;
    else {
      const low = e >= 0 ? POW10[e]! : 1 / POW10[-e]!;
      if (ax < low) e--;
    }
  }
  // Off the exact powers of ten (below ~1e-13 or above ~1e21), or when the scaled value's own rounding
  // lands one unit off the nearest 9-digit decimal: the slow path.
  let m = e - 8 < -22 || e > 22 ? -1 : mantissaAt(ax, e - 8);
  if (m < 0) return writeAscii(out, at, (x < 0 ? '-' : '') + shortestByPrecision(ax));
  // Fewer digits, one at a time, until they no longer read back: vectors' values mostly need 8 or 9, so
  // this stops after two or three tries.
  let p = 9;
  while (p > 1) {
    const fewer = mantissaAt(ax, e - p + 2);
    if (fewer < 0) break;
    m = fewer;
    p--;
  }
  let exp = e - p + 1;
  while (m % 10 === 0) {
    m /= 10;
    exp++;
  }
  if (x < 0) out[at++] = 0x2d;
  return writeDecimal(out, at, m, exp);
}

/** The longest a float32 can print as ("-340282350000000000000" has 22 characters), and its comma. */
const MAX_BYTES = 23;
let scratch = new Uint8Array(2 + 1536 * MAX_BYTES);

/** A float32 vector as a JSON array of shortest decimals, in ASCII bytes (a buffer of its own, of its exact size). */
export function float32ArrayToJsonBytes(v: Float32Array): Buffer {
  if (scratch.length < 2 + v.length * MAX_BYTES) scratch = new Uint8Array(2 + v.length * MAX_BYTES);
  const out = scratch;
  let at = 0;
  out[at++] = 0x5b; // [
  for (let i = 0; i < v.length; i++) {
    if (i > 0) out[at++] = 0x2c; // ,
    at = writeFloat32(out, at, v[i]!);
  }
  out[at++] = 0x5d; // ]
  return Buffer.from(out.subarray(0, at));
}

/** A float32 vector as a JSON array string (see float32ArrayToJsonBytes). */
export function float32ArrayToJson(v: Float32Array): string {
  return float32ArrayToJsonBytes(v).toString('latin1');
}

const one = Buffer.alloc(MAX_BYTES);

/** The shortest decimal string that parses (as a double, then rounded to float32) back to `x`, a float32 value. */
export function float32ToString(x: number): string {
  return one.toString('latin1', 0, writeFloat32(one, 0, x));
}

/** A Float32Array over little-endian float32 bytes, copying only when the bytes are not 4-byte aligned. */
export function float32View(bytes: Uint8Array): Float32Array {
  const aligned = bytes.byteOffset % 4 === 0 ? bytes : new Uint8Array(bytes);
  return new Float32Array(aligned.buffer, aligned.byteOffset, aligned.byteLength / 4);
}
