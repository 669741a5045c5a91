// What the time-series view plots: the columns shown, as one group (summed
// over nodes) or one group per node, each series a function from a sample's
// index to its value (a column, a sum over nodes, or a percentage of the
// event's maximum). The plots and the totals table are both built from it.

import { app } from "./state";
import type { Column } from "./protocol";

/** One series of a plot. */
export interface Shown {
  /** unique per display series */
  key: string;
  label: string;
  /** the column (for a synthesised sum: the first summed) */
  col: Column;
  /** store columns it reads */
  raw: number[];
  f: (k: number) => number;
  scale: "y" | "pct";
  /** synthesised here: the sum over nodes of raw */
  sum?: boolean;
}

/** One small multiple: a title and its series. */
export interface Group {
  title: string;
  series: Shown[];
}

/** eventKey names a column's event, the same for every node: "sensor.event". */
export function eventKey(c: Column): string {
  return `${c.sensor}.${c.event}`;
}

function sensorSources(sensor: string): number {
  const s = (app.hello?.catalog ?? []).find((x) => x.name === sensor);
  return s ? s.sources.length : 1;
}

/** perSource tells a column of one node (of a sensor with several) from a machine-wide one. */
function perSource(c: Column): boolean {
  return c.sources.length === 1 && sensorSources(c.sensor) > 1;
}

/** activeColumns is the current column set (live), or every column (recordings). */
export function activeColumns(): number[] {
  if (app.mode === "live") return app.store.cur;
  return app.store.cols.map((_, i) => i);
}

/** sumOf adds columns idx sample by sample, as the summed view plots them ("%" averaged); NaN where none has a value. */
export function sumOf(idx: number[], unit: string): (k: number) => number {
  const s = app.store;
  const div = unit === "%" ? idx.length : 1;
  return (k) => {
    let sum = 0,
      any = false;
    for (const i of idx) {
      const x = s.v[i][k];
      if (!Number.isNaN(x)) {
        sum += x;
        any = true;
      }
    }
    return any ? sum / div : NaN;
  };
}

function shown(i: number, label: string): Shown {
  const s = app.store;
  const c = s.cols[i];
  const a = () => s.v[i];
  let f = (k: number) => a()[k];
  let scale: "y" | "pct" = c.unit === "%" ? "pct" : "y";
  if (app.pct && c.unit !== "%" && c.max && c.max > 0) {
    const m = 100 / c.max;
    f = (k: number) => a()[k] * m;
    scale = "pct";
  }
  return { key: c.name, label, col: c, raw: [i], f, scale };
}

/** summed is the summed view's one group: every column, and per-node columns without a summed twin summed here. */
function summed(act: number[]): Group {
  const s = app.store;
  const out: Shown[] = [];
  const direct = new Set<string>();
  for (const i of act) {
    const c = s.cols[i];
    if (!perSource(c)) {
      out.push(shown(i, eventKey(c)));
      direct.add(eventKey(c));
    }
  }
  const sums = new Map<string, number[]>();
  for (const i of act) {
    const c = s.cols[i];
    const k = eventKey(c);
    if (perSource(c) && !direct.has(k)) sums.set(k, [...(sums.get(k) ?? []), i]);
  }
  for (const [k, idx] of sums) {
    const c = s.cols[idx[0]];
    const max = idx.reduce((m, i) => m + (s.cols[i].max ?? 0), 0);
    const sc: Column = { ...c, name: k, sources: idx.flatMap((i) => s.cols[i].sources), max: max || undefined };
    let f = sumOf(idx, c.unit);
    let scale: "y" | "pct" = c.unit === "%" ? "pct" : "y";
    if (c.unit !== "%" && app.pct && max > 0) {
      const g = f;
      f = (kk) => (g(kk) * 100) / max;
      scale = "pct";
    }
    out.push({ key: k, label: `${k} (Σ nodes)`, col: sc, raw: idx, f, scale, sum: true });
  }
  return { title: "all nodes (summed)", series: out };
}

/** groups builds what is plotted: one group (summed) or one per node. */
export function groups(): Group[] {
  const s = app.store;
  const act = activeColumns();
  if (!app.perNode) return [summed(act)];
  const bySrc = new Map<string, Shown[]>();
  const other: Shown[] = [];
  for (const i of act) {
    const c = s.cols[i];
    if (perSource(c)) {
      const src = c.sources[0];
      bySrc.set(src, [...(bySrc.get(src) ?? []), shown(i, eventKey(c))]);
    } else {
      other.push(shown(i, eventKey(c)));
    }
  }
  const out: Group[] = [...bySrc.entries()]
    .sort((a, b) => Number(a[0]) - Number(b[0]) || a[0].localeCompare(b[0]))
    .map(([src, series]) => ({ title: `node ${src}`, series }));
  if (other.length) out.push({ title: "machine-wide (not per node)", series: other });
  return out;
}
