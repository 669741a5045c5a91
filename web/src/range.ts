// View mode's data: the server holds the recording, and the client asks for
// min/max-decimated samples of the window ("range" requests), with a
// window's margin either side so that panning shows data at once. A reply is
// good while the window stays inside it and its buckets are at most a pixel
// wide.

import { Store } from "./data";
import { plotWidth } from "./plots";
import type { Row } from "./protocol";
import { nextID, send } from "./socket";
import { app } from "./state";

/** maybeFetch asks for the window's samples unless the store holds them at the resolution drawn. */
export function maybeFetch(): void {
  const px = Math.max(200, plotWidth(1000));
  const span = app.xr.max - app.xr.min;
  const f = app.fetched;
  const good = f && app.xr.min >= f.t0 && app.xr.max <= f.t1 && f.res <= (span / px) * 1.01;
  if (good || app.pending) return;
  const t0 = app.xr.min - span,
    t1 = app.xr.max + span;
  const points = Math.min(20000, Math.round(px * 2 * 3));
  app.pending = { t0, t1 };
  send({ type: "range", id: nextID(), t0, t1, points });
}

/** onRange replaces the store with a range reply's samples. */
export function onRange(m: { t0: number; t1: number; decimated: boolean; samples: Row[] }): void {
  const req = app.pending ?? { t0: m.t0, t1: m.t1 };
  app.pending = null;
  const s = new Store(Infinity);
  s.setColumns(app.hello?.columns ?? []);
  for (const row of m.samples) s.append(row);
  s.marks = app.store.marks;
  app.store = s;
  // Undecimated replies hold every sample of the range: resolution 0.
  const res = m.decimated ? (req.t1 - req.t0) / Math.max(1, m.samples.length / 2) : 0;
  app.fetched = { t0: req.t0, t1: req.t1, res };
}
