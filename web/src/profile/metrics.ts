// The profile's metrics as the pages show them: the seven of
// docs/profile.md with their labels, the derived ones tables also sort by,
// and the table columns of all of them.

import { asMetrics, METRIC_KEYS, type Location, type Metric, type Metrics } from "../documents";
import { base, percent, ranges } from "../format";
import type { Col, Key } from "./types";

/** The seven metrics' label, short label and what each counts. */
const LABELS: Record<Metric, readonly [string, string, string]> = {
  first_touch: ["first touch", "FT", "base pages placed by first-touch faults (512 per huge page)"],
  unpinned_first_touch: ["unpinned first touch", "uFT", "pages placed by a thread that was unpinned at the time"],
  local: ["local", "loc", "sampled accesses from a CPU on the page's node"],
  remote: ["remote", "rem", "sampled accesses from a CPU on another node"],
  unpinned_page: ["unpinned page", "uPg", "sampled accesses by a pinned thread to a page first touched by an unpinned thread"],
  unpinned_thread: ["unpinned thread", "uTh", "sampled accesses by an unpinned thread to a page first touched by a pinned thread"],
  unpinned_both: ["unpinned both", "uBo", "sampled accesses by an unpinned thread to a page first touched by an unpinned thread"],
};

/** The seven metrics of docs/profile.md, in its order: key, label, short label, what it counts. */
export const METRICS: readonly (readonly [Metric, string, string, string])[] = METRIC_KEYS.map((k) => [k, ...LABELS[k]] as const);

const DERIVED: [Key, string, string, string][] = [
  ["accesses", "accesses", "acc", "sampled accesses: local + remote"],
  ["remote_pct", "remote %", "rem%", "remote share of the sampled accesses"],
];

/** isHeatKey tells the keys a source can be tinted by: a metric or the accesses. */
export function isHeatKey(k: string): k is Metric | "accesses" {
  return k === "accesses" || METRICS.some(([m]) => m === k);
}

/** value is a metric of m, or one derived from them. */
export function value(m: Metrics, k: Key): number {
  switch (k) {
    case "accesses":
      return m.local + m.remote;
    case "remote_pct": {
      const a = m.local + m.remote;
      return a ? (100 * m.remote) / a : 0;
    }
    case "weight":
      return m.first_touch + m.local + m.remote;
    default:
      return m[k];
  }
}

/** zero is a set of metrics that are all 0. */
export function zero(): Metrics {
  return asMetrics(undefined);
}

/** add adds m into into. */
export function add(into: Metrics, m: Metrics): void {
  for (const [k] of METRICS) into[k] += m[k];
}

/** maxOf is the largest of vs, at least 0 (Math.max(...vs) overflows the stack on big arrays). */
export function maxOf(vs: Iterable<number>): number {
  let m = 0;
  for (const v of vs) if (v > m) m = v;
  return m;
}

/** where names a location briefly: file:line, or its function without line information. */
export function where(l: Location): string {
  if (!l.file) return l.function || "?";
  return `${base(l.file)}${l.line ? ":" + l.line : ""}`;
}

/** metricCols are the table columns of every metric (and the derived ones) of the rows' metrics. */
export function metricCols<R>(get: (r: R) => Metrics, bar = true): Col<R>[] {
  return [
    ...METRICS.map(([k, label, , title]) => ({ key: k, label, title, num: true, bar, get: (r: R) => value(get(r), k) })),
    ...DERIVED.map(([k, label, , title]) => ({
      key: k,
      label,
      title,
      num: true,
      bar: bar && k !== "remote_pct",
      get: (r: R) => value(get(r), k),
      text: k === "remote_pct" ? (r: R) => (value(get(r), "accesses") ? percent(value(get(r), k)) : "–") : undefined,
    })),
  ];
}

/** nodeList lists a node set, sorted, runs collapsed ("0-3,5"); "–" when empty. */
export function nodeList(nodes: readonly number[]): string {
  return ranges([...nodes].sort((a, b) => a - b)) || "–";
}
