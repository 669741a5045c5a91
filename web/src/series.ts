// What the time-series view plots: the columns shown, summed over nodes or
// per node, split into one plot per unit (a plot never mixes bytes with
// pages/s: the small values would lie flat on zero), each series a function
// from a sample's index to its value (a column, a sum over nodes, or a
// percentage of the event's maximum) with its colour. The plots and the
// totals table are both built from it (the types are src/types.ts).

import { pickColor } from "./colors";
import { mode } from "./page";
import type { Column } from "./protocol";
import { samples } from "./samples";
import type { Group, Shown } from "./types";

/** One colour per event, the same in every small multiple where that keeps a plot's colours apart (kept for the page's life). */
const colors = new Map<string, string>();

/** A group before it is split by unit. */
interface Place {
  title: string;
  series: Shown[];
  /** per node: the events that are not per node, plotted after the nodes' */
  other?: boolean;
}

/** plotUnit is the unit a series is plotted in: rates of counters per second, "% of max" when scaled to the maximum. */
export function plotUnit(s: Shown): string {
  const u = s.col.unit;
  if (s.scale === "pct") return u === "%" ? "%" : "% of max";
  if (s.col.kind === "counter") return `${u || "events"}/s`;
  return u || "value";
}

/** hasMax tells an event that can be plotted as % of its maximum (one that is not a percentage already). */
export function hasMax(c: Column): boolean {
  return c.unit !== "%" && c.max !== undefined && c.max > 0;
}

/** eventKey names a column's event, the same for every node: "sensor.event". */
export function eventKey(c: Column): string {
  return `${c.sensor}.${c.event}`;
}

function sensorSources(sensor: string): number {
  const s = (samples.hello?.catalog ?? []).find((x) => x.name === sensor);
  return s ? s.sources.length : 1;
}

/** perSource tells a column of one node (of a sensor with several) from a machine-wide one. */
function perSource(c: Column): boolean {
  return c.sources.length === 1 && sensorSources(c.sensor) > 1;
}

/** activeColumns is the current column set (live), or every column (recordings). */
export function activeColumns(): number[] {
  if (mode() === "live") return samples.store.cur;
  return samples.store.cols.map((_, i) => i);
}

/** sumOf adds columns idx sample by sample, as the summed view plots them ("%" averaged); NaN where none has a value. */
export function sumOf(idx: number[], unit: string): (k: number) => number {
  const s = samples.store;
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
  const s = samples.store;
  const c = s.cols[i];
  const a = () => s.v[i];
  let f = (k: number) => a()[k];
  let scale: "y" | "pct" = c.unit === "%" ? "pct" : "y";
  if (samples.pct && c.unit !== "%" && c.max && c.max > 0) {
    const m = 100 / c.max;
    f = (k: number) => a()[k] * m;
    scale = "pct";
  }
  return { key: c.name, label, col: c, raw: [i], f, scale, color: "" };
}

/** summed is the summed view's one group: every column, and per-node columns without a summed twin summed here. */
function summed(act: number[]): Place {
  const s = samples.store;
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
    if (c.unit !== "%" && samples.pct && max > 0) {
      const g = f;
      f = (kk) => (g(kk) * 100) / max;
      scale = "pct";
    }
    out.push({ key: k, label: `${k} (Σ nodes)`, col: sc, raw: idx, f, scale, sum: true, color: "" });
  }
  return { title: "all nodes (summed)", series: out };
}

/** The title of the per-node view's plots of events that are not per node; noNodes: no plot is per node. */
export function machineWide(noNodes: boolean): string {
  if (!noNodes) return "machine-wide (these events are not per node)";
  if (mode() === "live") return "machine-wide (not per node)";
  return "all nodes (recorded summed: record with --discrete for per-node plots)";
}

/**
 * byUnit splits the places into one plot per unit (units in the order they first appear,
 * then the places: per node, a unit's plots sit side by side, the machine-wide ones after
 * all of them) and gives the series their
 * colours, starting another plot of the unit when one has every colour it can tell apart.
 */
function byUnit(places: Place[]): Group[] {
  const units: string[] = [];
  for (const p of places) for (const x of p.series) if (!units.includes(plotUnit(x))) units.push(plotUnit(x));
  const out: Group[] = [];
  // The nodes' plots a row per unit, then the machine-wide ones (rows of nodes stay aligned).
  const order = [...units.map((u): [string, Place[]] => [u, places.filter((p) => !p.other)]), ...units.map((u): [string, Place[]] => [u, places.filter((p) => p.other)])];
  for (const [unit, ps] of order)
    for (const p of ps) {
      let g: Group = { title: p.title, unit, series: [] };
      let used: string[] = [];
      for (const x of p.series) {
        if (plotUnit(x) !== unit) continue;
        const ev = eventKey(x.col);
        let c = pickColor(used, colors.get(ev));
        if (c === null) {
          out.push(g);
          g = { title: p.title, unit, series: [] };
          used = [];
          c = pickColor(used, colors.get(ev)) ?? "#000000";
        }
        if (!colors.has(ev)) colors.set(ev, c);
        used.push(c);
        g.series.push({ ...x, color: c });
      }
      if (g.series.length) out.push(g);
    }
  return out;
}

/** groups builds what is plotted: one plot per unit, summed or per node. */
export function groups(): Group[] {
  return byUnit(places());
}

function places(): Place[] {
  const s = samples.store;
  const act = activeColumns();
  if (!samples.perNode) return [summed(act)];
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
  const out: Place[] = [...bySrc.entries()]
    .sort((a, b) => Number(a[0]) - Number(b[0]) || a[0].localeCompare(b[0]))
    .map(([src, series]) => ({ title: `node ${src}`, series }));
  if (other.length) out.push({ title: machineWide(out.length === 0), series: other, other: true });
  return out;
}
