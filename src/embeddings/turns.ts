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
