// View mode's data: the server holds the recording, and the client asks for
// min/max-decimated samples of the window ("range" requests), with a
// window's margin either side so that panning shows data at once. A reply is
// good while the window stays inside it and its buckets are at most a pixel
// wide. What was fetched and the request in flight are this module's own.

import { Store } from "./data";
import { plotWidth } from "./plots";
import type { Row } from "./protocol";
import { samples } from "./samples";
import { nextID, send } from "./socket";

/** the window the store holds and its resolution */
let fetched: { t0: number; t1: number; res: number } | null = null;
/** the range request in flight */
let pending: { t0: number; t1: number } | null = null;

/** maybeFetch asks for the window's samples unless the store holds them at the resolution drawn. */
export function maybeFetch(): void {
  const xr = samples.xr;
  const px = Math.max(200, plotWidth(1000));
  const span = xr.max - xr.min;
  const f = fetched;
  const good = f && xr.min >= f.t0 && xr.max <= f.t1 && f.res <= (span / px) * 1.01;
  if (good || pending) return;
  const t0 = xr.min - span,
    t1 = xr.max + span;
  const points = Math.min(20000, Math.round(px * 2 * 3));
  pending = { t0, t1 };
  send({ type: "range", id: nextID(), t0, t1, points });
}

/** onRange replaces the store with a range reply's samples. */
export function onRange(m: { t0: number; t1: number; decimated: boolean; samples: Row[] }): void {
  const req = pending ?? { t0: m.t0, t1: m.t1 };
  pending = null;
  const s = new Store(Infinity);
  s.setColumns(samples.hello?.columns ?? []);
  for (const row of m.samples) s.append(row);
  s.marks = samples.store.marks;
  samples.store = s;
  // Undecimated replies hold every sample of the range: resolution 0.
  const res = m.decimated ? (req.t1 - req.t0) / Math.max(1, m.samples.length / 2) : 0;
  fetched = { t0: req.t0, t1: req.t1, res };
}

/** resetRange forgets what was fetched (another recording). */
export function resetRange(): void {
  fetched = null;
}

/** rangeState says whether the store holds fetched samples, and whether a request is in flight (for the tests). */
export function rangeState(): { fetched: boolean; pending: boolean } {
  return { fetched: fetched !== null, pending: pending !== null };
}
