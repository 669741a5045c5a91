// The least and greatest of many numbers, by a loop. Math.min(...v) passes
// every value as an argument, on the stack: past about 120,000 of them it
// throws RangeError, which a CPU × CPU matrix of 350 CPUs or an experiment
// of that many runs reaches.

/** extent is the least and greatest of vs: [Infinity, -Infinity] when there are none, [NaN, NaN] when one is NaN (as Math.min and Math.max). */
export function extent(vs: Iterable<number>): [number, number] {
  let lo = Infinity,
    hi = -Infinity;
  for (const v of vs) {
    if (Number.isNaN(v)) return [NaN, NaN];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return [lo, hi];
}
