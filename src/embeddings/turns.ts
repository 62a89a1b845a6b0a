// Turns of the event loop for big answers' work: one slice of all of it per turn, whoever's it is.
//
// Each big call (printing a 2,097,152-float answer, hashing 2048 long inputs) works in slices of a few milliseconds.
// If each waited for the next turn on its own (setImmediate), every turn of the loop would run one slice of each: with
// three big calls under way, ~15 ms between two turns, and a small call, which needs a dozen turns (Postgres, Redis,
// the worker's reply), would wait that long at each. Here the slices queue: one slice runs per turn, in arrival order,
// so a small call's I/O waits for one slice at most, however many big calls are under way.

const waiting: (() => void)[] = [];
let scheduled = false;

function release() {
  scheduled = false;
  waiting.shift()?.();
  if (waiting.length) schedule();
}

function schedule() {
  if (scheduled) return;
  scheduled = true;
  setImmediate(release);
}

/** Resolves when it is this slice's turn: at most one per turn of the event loop, in order of asking. */
export function bigWorkTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    schedule();
  });
}

/**
 * `items.map(fn)`, a big list in slices of `slice` (by `cost`), each slice after the first waiting for its turn: a small
 * list never waits. For work on every vector of an answer (base64 both ways).
 */
export async function mapInTurns<T, R>(items: readonly T[], fn: (item: T) => R, cost: (item: T) => number, slice: number): Promise<R[]> {
  const out: R[] = [];
  let spent = 0;
  for (const item of items) {
    out.push(fn(item));
    spent += cost(item);
    if (spent >= slice) {
      spent = 0;
      await bigWorkTurn();
    }
  }
  return out;
}
