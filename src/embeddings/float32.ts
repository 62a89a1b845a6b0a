// Printing float32 vectors as JSON: each number is the shortest decimal that reads back as the same float32.
//
// JavaScript prints numbers as float64, so a float32 such as 0.6f (0.60000002384185791015625) comes out as
// 0.6000000238418579 — 17 digits, and a different number from the 0.6 an upstream sent. OpenAI prints
// float32 (-0.0069292835), and so do we: a relayed vector comes back exactly as the upstream wrote it
// (when it was a float32 to begin with), and a 1536-float answer is ~40% smaller.

// Powers of ten that are exact doubles: a p-digit integer times or divided by one is one correctly rounded
// operation, so the double it gives is the decimal's own nearest double (the classic strtod fast path).
const POW10 = Array.from({ length: 23 }, (_, i) => 10 ** i);

/** By trying 1, 2, … 9 significant digits: slow, but exact for every float32 (used off the fast path). */
function shortestByPrecision(x: number): string {
  for (let p = 1; p < 9; p++) {
    const d = Number(x.toPrecision(p));
    if (Math.fround(d) === x) return String(d);
  }
  return String(Number(x.toPrecision(9)));
}

/** m × 10^k with m of at most 9 digits, or NaN when that decimal does not read back as `ax`. */
function decimalAt(ax: number, e: number, p: number): number {
  const k = e - p + 1;
  const d = k >= 0 ? Math.round(ax / POW10[k]!) * POW10[k]! : Math.round(ax * POW10[-k]!) / POW10[-k]!;
  return Math.fround(d) === ax ? d : Number.NaN;
}

/**
 * m × 10^k written as JavaScript writes a number (so as JSON), without the double-to-string conversion:
 * `digits` is m without trailing zeros, `n` the position of the decimal point (ECMAScript's Number::toString).
 */
function writeDecimal(digits: string, n: number): string {
  const k = digits.length;
  if (k <= n && n <= 21) return digits + '0'.repeat(n - k);
  if (0 < n && n <= 21) return `${digits.slice(0, n)}.${digits.slice(n)}`;
  if (-6 < n && n <= 0) return `0.${'0'.repeat(-n)}${digits}`;
  const exp = n - 1 >= 0 ? `+${n - 1}` : `${n - 1}`;
  return k === 1 ? `${digits}e${exp}` : `${digits[0]}.${digits.slice(1)}e${exp}`;
}

/**
 * The shortest decimal string that parses (as a double, then rounded to float32) back to `x`, which must
 * be a float32 value. Nine significant digits always suffice; most values need 7 to 9 (and more digits never
 * read back worse than fewer). The string is built from the integer m, not by converting a double.
 */
export function float32ToString(x: number): string {
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  if (!Number.isFinite(x)) throw new RangeError(`not a finite number: ${x}`);
  const ax = Math.abs(x);
  let e = Math.floor(Math.log10(ax));
  // log10 may be off by one near powers of ten.
  if (e > -22 && e < 21) {
    const pow = e >= 0 ? POW10[e]! : 1 / POW10[-e]!;
    if (ax < pow) e--;
    else if (ax >= pow * 10) e++;
  }
  // Off the exact powers of ten (below ~1e-13 or above ~1e21), or when the scaled value's own rounding
  // lands one unit off the nearest 9-digit decimal: the slow path.
  if (e - 8 < -22 || e > 22 || Number.isNaN(decimalAt(ax, e, 9))) return (x < 0 ? '-' : '') + shortestByPrecision(ax);
  // Fewer digits, one at a time, until they no longer read back: vectors' values mostly need 8 or 9, so
  // this stops after two or three tries.
  let p = 9;
  while (p > 1 && !Number.isNaN(decimalAt(ax, e, p - 1))) p--;
  const k = e - p + 1;
  let m = k >= 0 ? Math.round(ax / POW10[k]!) : Math.round(ax * POW10[-k]!);
  let exp = k;
  while (m % 10 === 0) {
    m /= 10;
    exp++;
  }
  const digits = String(m);
  return (x < 0 ? '-' : '') + writeDecimal(digits, digits.length + exp);
}

/** A float32 vector as a JSON array, each element printed by float32ToString. */
export function float32ArrayToJson(v: Float32Array): string {
  if (v.length === 0) return '[]';
  let out = `[${float32ToString(v[0]!)}`;
  for (let i = 1; i < v.length; i++) out += `,${float32ToString(v[i]!)}`;
  return `${out}]`;
}

/** A Float32Array over little-endian float32 bytes, copying only when the bytes are not 4-byte aligned. */
export function float32View(bytes: Uint8Array): Float32Array {
  const aligned = bytes.byteOffset % 4 === 0 ? bytes : new Uint8Array(bytes);
  return new Float32Array(aligned.buffer, aligned.byteOffset, aligned.byteLength / 4);
}
