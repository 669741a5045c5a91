// The client's data model: columns by name across column-set changes, a
// growable columnar store of samples, min/max decimation for drawing and the
// totals of a time window.

import type { Column, Mark } from "./protocol";

/** Store holds samples column by column; NaN where a column had no value. */
export class Store {
  cols: Column[] = [];
  index = new Map<string, number>();
  t = new Float64Array(1024);
  v: Float64Array[] = [];
  n = 0;
  marks: Mark[] = [];
  /** positions in cols of the values of the current column set */
  cur: number[] = [];

  /**
   * maxValues bounds the memory of a live session (8 bytes a value): the
   * oldest half of the rows goes when rows × (columns + 1) would exceed it.
   * Stores of files loaded whole pass Infinity.
   */
  constructor(public maxValues = 32_000_000) {}

  private get maxRows(): number {
    return Math.max(1024, Math.floor(this.maxValues / (this.v.length + 1)));
  }

  /** setColumns switches to a new column set; known names keep their place. */
  setColumns(cols: Column[]): void {
    this.cur = cols.map((c) => {
      let i = this.index.get(c.name);
      if (i === undefined) {
        i = this.cols.length;
        this.cols.push(c);
        this.index.set(c.name, i);
        const a = new Float64Array(this.t.length);
        a.fill(NaN, 0, this.n);
        this.v.push(a);
      }
      return i;
    });
  }

  private grow(): void {
    if (this.n >= this.maxRows) {
      // Drop the oldest half: a live session can run for days.
      const keep = this.n >> 1;
      const from = this.n - keep;
      this.t.copyWithin(0, from, this.n);
      for (const a of this.v) a.copyWithin(0, from, this.n);
      this.n = keep;
      return;
    }
    const cap = Math.min(this.t.length * 2, this.maxRows + 1);
    const t = new Float64Array(cap);
    t.set(this.t.subarray(0, this.n));
    this.t = t;
    this.v = this.v.map((a) => {
      const b = new Float64Array(cap);
      b.set(a.subarray(0, this.n));
      return b;
    });
  }

  /** append adds one row [t, values of the current column set...]. */
  append(row: ArrayLike<number | null>): void {
    if (this.n >= this.t.length) this.grow();
    const k = this.n++;
    this.t[k] = row[0] as number;
    const cur = this.cur;
    if (cur.length < this.v.length) {
      for (const a of this.v) a[k] = NaN;
    }
    for (let i = 0; i < cur.length; i++) {
      const x = row[i + 1];
      this.v[cur[i]][k] = x === null || x === undefined ? NaN : x;
    }
  }

  get tMin(): number {
    return this.n ? this.t[0] : 0;
  }
  get tMax(): number {
    return this.n ? this.t[this.n - 1] : 0;
  }

  /** lower returns the first index with t >= x. */
  lower(x: number): number {
    let lo = 0,
      hi = this.n;
    while (lo < hi) {
      const m = (lo + hi) >> 1;
      if (this.t[m] < x) lo = m + 1;
      else hi = m;
    }
    return lo;
  }

  /** upper returns the first index with t > x. */
  upper(x: number): number {
    let lo = 0,
      hi = this.n;
    while (lo < hi) {
      const m = (lo + hi) >> 1;
      if (this.t[m] <= x) lo = m + 1;
      else hi = m;
    }
    return lo;
  }
}

export interface Series {
  t: number[];
  v: (number | null)[][];
}

/**
 * decimate returns the samples of columns `which` in [t0, t1] (plus one
 * either side), at most about `points` rows: each bucket of consecutive
 * samples becomes two rows holding its minimum and maximum in the order
 * they occur, so peaks survive. `f` maps a column's raw value (for sums and
 * percentages).
 */
export function decimate(
  s: Store,
  which: ((k: number) => number)[],
  t0: number,
  t1: number,
  points: number,
): Series {
  const lo = Math.max(s.lower(t0) - 1, 0);
  const hi = Math.min(s.upper(t1) + 1, s.n);
  const n = hi - lo;
  const out: Series = { t: [], v: which.map(() => []) };
  if (n <= 0) return out;
  if (n <= points) {
    for (let k = lo; k < hi; k++) {
      out.t.push(s.t[k]);
      for (let i = 0; i < which.length; i++) {
        const x = which[i](k);
        out.v[i].push(Number.isNaN(x) ? null : x);
      }
    }
    return out;
  }
  const buckets = Math.max(1, points >> 1);
  for (let j = 0; j < buckets; j++) {
    const a = lo + Math.floor((j * n) / buckets);
    const e = lo + Math.floor(((j + 1) * n) / buckets);
    if (e <= a) continue;
    out.t.push(s.t[a]);
    const two = e - 1 > a;
    if (two) out.t.push(s.t[e - 1]);
    for (let i = 0; i < which.length; i++) {
      const f = which[i];
      let mn = Infinity,
        mx = -Infinity,
        imn = -1,
        imx = -1;
      for (let k = a; k < e; k++) {
        const x = f(k);
        if (x < mn) {
          mn = x;
          imn = k;
        }
        if (x > mx) {
          mx = x;
          imx = k;
        }
      }
      const col = out.v[i];
      if (imn < 0) {
        col.push(null);
        if (two) col.push(null);
      } else if (!two) {
        col.push(f(a));
      } else if (imn <= imx) {
        col.push(mn, mx);
      } else {
        col.push(mx, mn);
      }
    }
  }
  return out;
}

export interface Total {
  name: string;
  node: string;
  unit: string;
  kind: string;
  n: number;
  count: number | null; // counters: events in the window; gauges: null
  mean: number | null;
  max: number | null;
}

/** nodeOf is the node a column is of, as the totals table says it: its one source, or "all". */
export function nodeOf(col: Column): string {
  return col.sources.length === 1 && col.sources[0] !== "" ? col.sources[0] : "all";
}

/**
 * totals computes, per column, over the samples with t in [t0, t1]: the
 * number of events (a counter's rate integrated over each sample's
 * interval), the mean rate (or level) and the maximum.
 */
export function totals(s: Store, cols: { name: string; col: Column; f: (k: number) => number }[], t0: number, t1: number): Total[] {
  const lo = s.lower(t0),
    hi = s.upper(t1);
  return cols.map(({ name, col, f }) => {
    let n = 0,
      sum = 0,
      area = 0,
      span = 0,
      max = -Infinity;
    for (let k = lo; k < hi; k++) {
      const x = f(k);
      if (Number.isNaN(x)) continue;
      n++;
      sum += x;
      if (x > max) max = x;
      if (k > 0) {
        const dt = s.t[k] - s.t[k - 1];
        area += x * dt;
        span += dt;
      }
    }
    const counter = col.kind === "counter" && col.unit !== "%";
    return {
      name,
      node: nodeOf(col),
      unit: col.unit,
      kind: col.kind,
      n,
      count: counter && n ? area : null,
      mean: !n ? null : counter && span > 0 ? area / span : sum / n,
      max: n ? max : null,
    };
  });
}

/** totalsCSV renders a totals table as CSV (RFC 4180 quoting). */
export function totalsCSV(rows: Total[], t0: number, t1: number): string {
  const q = (s: string) => (/[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s);
  const num = (x: number | null) => (x === null ? "" : String(x));
  const lines = [`# window_s,${t0},${t1}`, "column,node,unit,kind,samples,count,mean_rate,max_rate"];
  for (const r of rows) {
    lines.push([q(r.name), q(r.node), q(r.unit), r.kind, String(r.n), num(r.count), num(r.mean), num(r.max)].join(","));
  }
  return lines.join("\n") + "\n";
}
