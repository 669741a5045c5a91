// The types the time-series view's modules share (src/series.ts builds the groups, src/plots.ts
// draws them, src/totals.ts sums them, src/samples.ts holds what they are drawn from), and the
// pages the client can show. They live here, below every module that uses them, so that no two
// modules import each other for a type.

import type uPlot from "uplot";
import type { CatalogSensor, Column } from "./protocol";

/** The page shown: none yet, the time-series view of live, view or a file, or one of the document pages. */
export type Mode = "none" | "live" | "view" | "file" | "experiment" | "profile" | "bench" | "hosts";

/** What the data says about itself: the hello of live or view, or a file's header. */
export interface Described {
  /** the sensors (view and files: without events); their sources tell per-node columns */
  catalog: CatalogSensor[];
  columns: Column[];
  /** view: the recording's samples */
  samples?: number;
}

/** A time window, in seconds since the start. */
export interface Window {
  min: number;
  max: number;
}

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
  /** its colour in its plot (src/colors.ts) */
  color: string;
}

/** One small multiple: where its series come from (title: "node 0"), their one unit, and the series. */
export interface Group {
  title: string;
  /** what the y axis measures: "bytes", "pages/s", "%", "% of max" */
  unit: string;
  series: Shown[];
}

/** One small multiple drawn: its series, its uPlot and its card. */
export interface PlotBox {
  group: Group;
  u: uPlot;
  card: HTMLElement;
}
