// The totals table under the plots: per trace shown, the samples, count,
// mean and max rate over the window. Live and files compute them here
// (src/data.ts); view asks the server, which has every sample at full
// resolution ("totals" requests). Also its CSV export. The rows shown and
// the server's totals are this module's own state.

import { nodeOf, totals, totalsCSV, type Total } from "./data";
import { $ } from "./dom";
import { si } from "./format";
import type { Column, SumRequest, TotalsRow } from "./protocol";
import { mode } from "./page";
import { samples } from "./samples";
import { sumOf } from "./series";
import { nextID, send } from "./socket";
import type { Group } from "./types";

/** The server's totals for a window (view), and which sums they were asked for. */
interface RemoteTotals {
  t0: number;
  t1: number;
  columns: TotalsRow[];
  sums?: TotalsRow[];
  key: string;
}

let remoteTotals: RemoteTotals | null = null;
/** the rows of the totals table */
let lastTotals: Total[] = [];
/** the window and sums last asked for, the timer that asks, and each request's sums by id */
const asked = { wanted: "", timer: 0, keys: new Map<number, string>() };

/**
 * updateTotals fills the totals table with what the plots show: in the
 * summed view one row per trace, so the per-node columns of a --discrete
 * recording appear as their sum over nodes; per node, one row per column.
 */
export function updateTotals(gs: Group[]): void {
  const s = samples.store;
  const seen = new Set<string>();
  const cols: { name: string; col: Column; f: (k: number) => number }[] = [];
  const sums: SumRequest[] = [];
  for (const g of gs)
    for (const x of g.series) {
      if (x.sum) {
        if (seen.has(x.key)) continue;
        seen.add(x.key);
        cols.push({ name: x.key, col: x.col, f: sumOf(x.raw, x.col.unit) });
        sums.push({ name: x.key, columns: x.raw.map((i) => s.cols[i].name) });
        continue;
      }
      for (const i of x.raw) {
        const name = s.cols[i].name;
        if (seen.has(name)) continue;
        seen.add(name);
        cols.push({ name, col: s.cols[i], f: (k) => s.v[i][k] });
      }
    }
  let rows: Total[];
  if (mode() === "view") {
    requestTotals(sums);
    const rt = remoteTotals;
    if (!rt) return;
    const byName = new Map<string, TotalsRow>([...rt.columns, ...(rt.sums ?? [])].map((c) => [c.name, c]));
    rows = cols.map(({ name, col }) => {
      const r = byName.get(name);
      return { name, node: nodeOf(col), unit: col.unit, kind: col.kind, n: r?.n ?? 0, count: r?.count ?? null, mean: r?.mean ?? null, max: r?.max ?? null };
    });
  } else {
    rows = totals(s, cols, samples.xr.min, samples.xr.max);
  }
  lastTotals = rows;
  const tb = $("totals").querySelector("tbody");
  if (!tb) return;
  tb.replaceChildren();
  for (const r of rows) {
    const tr = document.createElement("tr");
    for (const v of [r.name, r.node, r.unit, String(r.n), si(r.count), si(r.mean), si(r.max)]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.appendChild(td);
    }
    tb.appendChild(tr);
  }
}

/** requestTotals asks the server (view) for the window's totals, once the window has stood still for 150 ms. */
function requestTotals(sums: SumRequest[]): void {
  const T = asked;
  const rt = remoteTotals;
  const xr = samples.xr;
  const key = JSON.stringify(sums);
  if (rt && rt.t0 === xr.min && rt.t1 === xr.max && rt.key === key) return;
  const wanted = `${xr.min} ${xr.max} ${key}`;
  if (T.wanted === wanted) return;
  T.wanted = wanted;
  clearTimeout(T.timer);
  T.timer = window.setTimeout(() => {
    const id = nextID();
    T.keys.set(id, key);
    send({ type: "totals", id, t0: samples.xr.min, t1: samples.xr.max, ...(sums.length ? { sums } : {}) });
  }, 150);
}

/** onTotals takes the server's reply to a totals request. */
export function onTotals(m: { id?: string | number; t0: number; t1: number; columns: TotalsRow[]; sums?: TotalsRow[] }, gs: Group[]): void {
  const id = typeof m.id === "number" ? m.id : NaN;
  remoteTotals = { t0: m.t0, t1: m.t1, columns: m.columns, sums: m.sums, key: asked.keys.get(id) ?? "" };
  asked.keys.delete(id);
  updateTotals(gs);
}

/** resetTotals forgets the server's totals (another recording). */
export function resetTotals(): void {
  remoteTotals = null;
  asked.wanted = "";
}

/** shownTotals are the rows of the totals table (for the tests). */
export function shownTotals(): readonly Total[] {
  return lastTotals;
}

/** exportCSV downloads the totals table as CSV. */
export function exportCSV(): void {
  const csv = totalsCSV(lastTotals, samples.xr.min, samples.xr.max);
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([csv], { type: "text/csv" }));
  a.download = "numascope-totals.csv";
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
