// The client's state, in one typed store: what is shown (the mode, the
// samples, the time window, the view's switches), the connection, the
// requests in flight and what the plots and the totals table keep between
// frames. Every module reads and changes this one object, `app`; the tests
// read it too (window.__numascope.app).

import type uPlot from "uplot";
import { Store, type Total } from "./data";
import type { CatalogSensor, Column, HostsHello, State, TotalsRow } from "./protocol";
import type { BenchDocument, Experiment } from "./documents";
import type { Group } from "./series";

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

/** One small multiple: its series, its uPlot and its card. */
export interface PlotBox {
  group: Group;
  u: uPlot;
  card: HTMLElement;
}

/** The server's totals for a window (view), and which sums they were asked for. */
export interface RemoteTotals {
  t0: number;
  t1: number;
  columns: TotalsRow[];
  sums?: TotalsRow[];
  key: string;
}

/** The bench page: the document shown, its file, and the loaded-latency plot drawn from it (destroyed when the page is redrawn). */
export interface BenchPage {
  doc: BenchDocument;
  file: string;
  loaded: uPlot | null;
}

/** The hosts page: several hosts' recordings on one time axis, the event shown and one uPlot per host (destroyed when the page is redrawn). */
export interface HostsPage {
  hello: HostsHello;
  event: string;
  plots: { host: number; u: uPlot }[];
}

/** A source file as numascope view read it for the profile's Source page: where, and its lines. */
export interface SourceFile {
  path: string;
  lines: string[];
}

export interface App {
  mode: Mode;
  /** the samples shown */
  store: Store;
  hello: Described | null;
  /** the live session's shared state */
  state: State;
  perNode: boolean;
  /** plot events with a known maximum as % of it */
  pct: boolean;
  /** series (and events) switched off, by key */
  hidden: Set<string>;
  /** follow the newest data (live) or the whole recording */
  follow: boolean;
  windowS: number;
  xr: Window;
  ws: WebSocket | null;
  /** samples received (live) */
  received: number;
  /** the recording's duration (view) */
  duration: number;
  /** view: the window the store holds and its resolution, and the range request in flight */
  fetched: { t0: number; t1: number; res: number } | null;
  pending: { t0: number; t1: number } | null;
  /** the last request id used */
  reqID: number;
  remoteTotals: RemoteTotals | null;
  /** the rows of the totals table */
  lastTotals: Total[];
  report: Experiment | null;
  /** the bench document shown (mode "bench") */
  bench: BenchPage | null;
  /** the hosts page (mode "hosts") */
  hosts: HostsPage | null;
  plots: {
    boxes: PlotBox[];
    /** what the plots were built for: they are rebuilt when it changes */
    signature: string;
    /** the y range the small multiples of each unit share */
    yShared: Map<string, [number, number]>;
    /** set while the client itself updates the plots (not the user toggling a series) */
    internalScale: boolean;
    rafPending: boolean;
    /** one colour per event, the same in every small multiple where that keeps a plot's colours apart (src/series.ts) */
    colors: Map<string, string>;
  };
  /** the profile's source requests in flight, by id, and the last id used */
  sources: {
    waits: Map<string, { resolve: (v: SourceFile) => void; reject: (e: Error) => void }>;
    last: number;
  };
  totals: {
    lastAt: number;
    timer: number;
    /** the window and sums last asked for, and each request's sums by id */
    wanted: string;
    keys: Map<number, string>;
  };
}

export const app: App = {
  mode: "none",
  store: new Store(),
  hello: null,
  state: { interval_s: 1, paused: false, discrete: false, events: [], recording: "" },
  perNode: false,
  pct: false,
  hidden: new Set(),
  follow: true,
  windowS: 60,
  xr: { min: 0, max: 60 },
  ws: null,
  received: 0,
  duration: 0,
  fetched: null,
  pending: null,
  reqID: 0,
  remoteTotals: null,
  lastTotals: [],
  report: null,
  bench: null,
  hosts: null,
  plots: { boxes: [], signature: "", yShared: new Map(), internalScale: false, rafPending: false, colors: new Map() },
  sources: { waits: new Map(), last: 0 },
  totals: { lastAt: 0, timer: 0, wanted: "", keys: new Map() },
};
