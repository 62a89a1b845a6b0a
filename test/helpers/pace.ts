// Time bounds that hold on a loaded machine (outside test/timing no bound is absolute): what the code may take is
// what it is allowed to wait (a configured timeout; 0 for "at once") plus a generous multiple of the same work
// measured in the same run while things were healthy. Load lengthens the baseline and the bound with it; a hang, a
// retry loop or a missed timeout still goes far past it.

/** The median time (ms) of `work` over `runs` runs, now. */
export async function baseline(work: () => Promise<unknown>, runs = 5): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await work();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** The bound for work like the baseline's that may also wait `allowedMs`: allowedMs + factor × baseline (taken as at least 25 ms). */
export function within(allowedMs: number, baselineMs: number, factor = 20): number {
  return allowedMs + factor * Math.max(baselineMs, 25);
}
