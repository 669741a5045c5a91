// The web protocol of docs/live-protocol.md as types: what the server sends
// (parseServerMessage reads and checks it) and what the client may send, plus
// the shapes a recording shares with it (columns, marks, the topology, the
// sensors). The profile, experiment and bench documents a hello can carry
// are in src/documents.ts.

import * as J from "./json";
import { readBench, readExperiment, readProfile, type BenchDocument, type Experiment, type Profile } from "./documents";

/** PROTOCOL is the protocol version this client speaks. */
export const PROTOCOL = 1;

/** A column of the recording format (docs/recording-format.md). */
export interface Column {
  name: string;
  sensor: string;
  event: string;
  sources: string[];
  unit: string;
  kind: string;
  desc: string;
  max?: number;
}

/** A mark: label, interval, pause, resume or columns (a column-set change). */
export interface Mark {
  mark: string;
  t: number;
  text?: string;
  interval_s?: number;
}

/** The state every client of a live session shares. */
export interface State {
  interval_s: number;
  paused: boolean;
  discrete: boolean;
  events: string[];
  recording: string;
}

/** A sample row: [t, v1, ..., vN], null where a value could not be read. */
export type Row = (number | null)[];

/** A sensor as a recording lists it (and a view-mode catalog, with no events). */
export interface SensorInfo {
  name: string;
  present: boolean;
  reason?: string;
  sources: string[];
}

/** An event of the live catalog. */
export interface CatalogEvent {
  name: string;
  unit: string;
  kind: string;
  desc: string;
  max?: number;
  /** set only for an event listed but not countable here: the one-line message, and its parts */
  unavailable?: string;
  reason?: string;
  fix?: string;
}

/** A sensor of the live catalog, with its events. */
export interface CatalogSensor extends SensorInfo {
  events: CatalogEvent[];
}

/**
 * A NUMA node of the topology (`numascope topology --format json`). A file
 * loaded from disk can hold anything, so ids, CPUs and distances are kept as
 * the file has them, numbers or strings, and only ever shown as text.
 */
export interface TopologyNode {
  id: number | string;
  cpus: (number | string)[];
  memory_total_bytes: number;
  memory_free_bytes: number;
  distances: Record<string, number | string>;
}

export interface Topology {
  nodes: TopologyNode[];
}

/** A row of a totals reply: per column or per requested sum. */
export interface TotalsRow {
  name: string;
  n: number;
  count: number | null;
  mean: number | null;
  max: number | null;
}

/** The hello of a live session or a recording served by numascope view. */
export interface DataHello {
  type: "hello";
  protocol: number;
  mode: "live" | "view";
  host: string;
  kernel: string;
  topology?: Topology;
  catalog: CatalogSensor[];
  columns: Column[];
  state: State;
  /** view only */
  file?: string;
  duration_s?: number;
  samples?: number;
  marks: Mark[];
  skipped: string[];
}

/** The hello of an experiment report (numascope experiment --web): all of it. */
export interface ExperimentHello {
  type: "hello";
  protocol: number;
  mode: "experiment";
  file: string;
  experiment: Experiment;
}

/** The hello of a profile (numascope view PROFILE.json). */
export interface ProfileHello {
  type: "hello";
  protocol: number;
  mode: "profile";
  file: string;
  profile: Profile;
  hints: string[];
  source_path: string[];
}

/** The hello of a bench document (numascope view bench.json): all of it. */
export interface BenchHello {
  type: "hello";
  protocol: number;
  mode: "bench";
  file: string;
  bench: BenchDocument;
}

/** One host's recording in a hosts hello: its data decimated once, t in seconds since its own start. */
export interface HostRecording {
  host: string;
  kernel: string;
  file: string;
  /** its wall-clock start, as the header has it (RFC 3339) */
  start: string;
  /** its start minus the earliest start, in seconds: where its t = 0 lies on the shared axis */
  offset_s: number;
  duration_s: number;
  samples: number;
  skipped: string[];
  columns: Column[];
  decimated: boolean;
  rows: Row[];
}

/** The hello of several hosts' recordings (numascope view A B ...): all of them, aligned by start time. */
export interface HostsHello {
  type: "hello";
  protocol: number;
  mode: "hosts";
  file: string;
  /** the earliest start (RFC 3339), t = 0 of the shared axis */
  start: string;
  hosts: HostRecording[];
}

export type Hello = DataHello | ExperimentHello | ProfileHello | BenchHello | HostsHello;

/** Every message the server sends. Replies carry the request's id. */
export type ServerMessage =
  | Hello
  | { type: "batch"; samples: Row[] }
  | { type: "columns"; t: number; columns: Column[]; state: State }
  | ({ type: "mark" } & Mark)
  | { type: "state"; state: State }
  | { type: "range"; id?: string | number; t0: number; t1: number; decimated: boolean; samples: Row[] }
  | { type: "source"; id?: string | number; file: string; path: string; lines: string[] }
  | { type: "totals"; id?: string | number; t0: number; t1: number; columns: TotalsRow[]; sums?: TotalsRow[] }
  | { type: "ok"; id?: string | number; op: string }
  | { type: "error"; id?: string | number; error: string };

/** A sum to total, as the summed view plots it: the name and the columns it adds. */
export interface SumRequest {
  name: string;
  columns: string[];
}

/** Every request the client sends (docs/live-protocol.md, "Client to server"). */
export type ClientMessage =
  | { type: "interval"; interval: string }
  | { type: "pause" }
  | { type: "resume" }
  | { type: "label"; text: string }
  | { type: "events"; events: string[] }
  | { type: "discrete"; discrete: boolean }
  | { type: "record"; path?: string }
  | { type: "record_stop" }
  | { type: "range"; id: number; t0: number; t1: number; points: number }
  | { type: "totals"; id: number; t0: number; t1: number; sums?: SumRequest[] }
  | { type: "source"; id: string; file: string };

// ---------------------------------------------------------------- reading


export function asColumn(v: unknown): Column | undefined {
  if (!J.isObj(v)) return undefined;
  const c: Column = {
    name: J.strOr(v.name, ""),
    sensor: J.strOr(v.sensor, ""),
    event: J.strOr(v.event, ""),
    sources: J.strings(v.sources),
    unit: J.strOr(v.unit, ""),
    kind: J.strOr(v.kind, ""),
    desc: J.strOr(v.desc, ""),
  };
  const max = J.num(v.max);
  if (max !== undefined) c.max = max;
  return c;
}

function markOf(v: J.Obj): Mark {
  return { mark: J.strOr(v.mark, ""), t: J.numOr(v.t, NaN), text: J.str(v.text), interval_s: J.num(v.interval_s) };
}

export function asMark(v: unknown): Mark | undefined {
  return J.isObj(v) ? markOf(v) : undefined;
}

export function asState(v: unknown): State {
  const o = J.obj(v);
  return { interval_s: J.numOr(o.interval_s, 1), paused: !!J.bool(o.paused), discrete: !!J.bool(o.discrete), events: J.strings(o.events), recording: J.strOr(o.recording, "") };
}

export function asSensorInfo(v: unknown): SensorInfo | undefined {
  if (!J.isObj(v)) return undefined;
  return { name: J.strOr(v.name, ""), present: !!J.bool(v.present), reason: J.str(v.reason), sources: J.strings(v.sources) };
}

function asCatalogEvent(v: unknown): CatalogEvent | undefined {
  if (!J.isObj(v)) return undefined;
  return {
    name: J.strOr(v.name, ""),
    unit: J.strOr(v.unit, ""),
    kind: J.strOr(v.kind, ""),
    desc: J.strOr(v.desc, ""),
    max: J.num(v.max),
    unavailable: J.str(v.unavailable),
    reason: J.str(v.reason),
    fix: J.str(v.fix),
  };
}

function asCatalogSensor(v: unknown): CatalogSensor | undefined {
  const s = asSensorInfo(v);
  return s && { ...s, events: J.list(J.obj(v).events, asCatalogEvent) };
}

/** asTopology reads a topology; undefined when there is none. */
export function asTopology(v: unknown): Topology | undefined {
  if (!J.isObj(v)) return undefined;
  return {
    nodes: J.list(v.nodes, (n) => {
      if (!J.isObj(n)) return undefined;
      return {
        id: J.scalar(n.id) ?? "?",
        cpus: J.list(n.cpus, J.scalar),
        memory_total_bytes: J.numOr(n.memory_total_bytes, 0),
        memory_free_bytes: J.numOr(n.memory_free_bytes, 0),
        distances: J.record(n.distances, J.scalar),
      };
    }),
  };
}

function asTotalsRow(v: unknown): TotalsRow | undefined {
  if (!J.isObj(v)) return undefined;
  return { name: J.strOr(v.name, ""), n: J.numOr(v.n, 0), count: J.numOrNull(v.count), mean: J.numOrNull(v.mean), max: J.numOrNull(v.max) };
}

const rows = (v: unknown) => J.list(v, J.row);

function asHostRecording(v: unknown): HostRecording | undefined {
  if (!J.isObj(v)) return undefined;
  const data = J.obj(v.data);
  return {
    host: J.strOr(v.host, ""),
    kernel: J.strOr(v.kernel, ""),
    file: J.strOr(v.file, ""),
    start: J.strOr(v.start, ""),
    offset_s: J.numOr(v.offset_s, 0),
    duration_s: J.numOr(v.duration_s, 0),
    samples: J.numOr(v.samples, 0),
    skipped: J.strings(v.skipped),
    columns: J.list(v.columns, asColumn),
    decimated: !!J.bool(data.decimated),
    rows: rows(data.samples),
  };
}
const id = (v: unknown) => J.scalar(v);

function asHello(m: J.Obj): Hello {
  const base = { type: "hello" as const, protocol: J.numOr(m.protocol, 0) };
  const file = J.strOr(m.file, "");
  switch (m.mode) {
    case "experiment":
      return { ...base, mode: "experiment", file, experiment: readExperiment(m.experiment) };
    case "profile":
      return { ...base, mode: "profile", file, profile: readProfile(m.profile), hints: J.strings(m.hints), source_path: J.strings(m.source_path) };
    case "bench":
      return { ...base, mode: "bench", file, bench: readBench(m.bench) };
    case "hosts":
      return { ...base, mode: "hosts", file, start: J.strOr(m.start, ""), hosts: J.list(m.hosts, asHostRecording) };
    case "live":
    case "view":
      break;
    default:
      throw new Error(`the server's hello has an unknown mode ${JSON.stringify(m.mode)}: reload the page`);
  }
  return {
    ...base,
    mode: m.mode,
    host: J.strOr(m.host, ""),
    kernel: J.strOr(m.kernel, ""),
    topology: asTopology(m.topology),
    catalog: J.list(m.catalog, asCatalogSensor),
    columns: J.list(m.columns, asColumn),
    state: asState(m.state),
    file: J.str(m.file),
    duration_s: J.num(m.duration_s),
    samples: J.num(m.samples),
    marks: J.list(m.marks, asMark),
    skipped: J.strings(m.skipped),
  };
}

/**
 * parseServerMessage reads one websocket message. It throws on text that is
 * not a JSON object with a type, and returns null for a type this client
 * does not know (newer servers may add some: docs/live-protocol.md,
 * "Versioning").
 */
export function parseServerMessage(text: string): ServerMessage | null {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error("the server sent a message that is not JSON");
  }
  if (!J.isObj(v)) throw new Error("the server sent a message that is not a JSON object");
  switch (v.type) {
    case "hello":
      return asHello(v);
    case "batch":
      return { type: "batch", samples: rows(v.samples) };
    case "columns":
      return { type: "columns", t: J.numOr(v.t, NaN), columns: J.list(v.columns, asColumn), state: asState(v.state) };
    case "mark":
      return { type: "mark", ...markOf(v) };
    case "state":
      return { type: "state", state: asState(v.state) };
    case "range":
      return { type: "range", id: id(v.id), t0: J.numOr(v.t0, NaN), t1: J.numOr(v.t1, NaN), decimated: !!J.bool(v.decimated), samples: rows(v.samples) };
    case "source": {
      const file = J.strOr(v.file, "");
      return { type: "source", id: id(v.id), file, path: J.strOr(v.path, file), lines: J.strings(v.lines) };
    }
    case "totals":
      return { type: "totals", id: id(v.id), t0: J.numOr(v.t0, NaN), t1: J.numOr(v.t1, NaN), columns: J.list(v.columns, asTotalsRow), sums: J.optList(v.sums, asTotalsRow) };
    case "ok":
      return { type: "ok", id: id(v.id), op: J.strOr(v.op, "") };
    case "error":
      return { type: "error", id: id(v.id), error: J.strOr(v.error, "error") };
  }
  if (typeof v.type !== "string") throw new Error("the server sent a message without a type");
  return null;
}
