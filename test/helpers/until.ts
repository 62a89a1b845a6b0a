// Polling a condition in tests against real processes: what is read each time, what it must be, and for how long.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reads `read()` every 50 ms until `ok` holds, and returns that value; past `timeoutMs`, fails naming `what` and the last value. */
export async function until<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await sleep(50);
  }
}
