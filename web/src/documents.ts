// The JSON documents the client draws besides recordings, as types, and
// their readers: a profile (`numascope profile`, docs/profile.md, "The JSON
// format") and an experiment report (`numascope experiment --format json`,
// or `--web`'s analysis with the runs of its results file). A document can
// come from disk, so it is read field by field (src/json.ts): a field of the
// wrong type counts as absent.

import * as J from "./json";

// ---------------------------------------------------------------- profile

/** The seven metrics of docs/profile.md, in its order. */
export const METRIC_KEYS = ["first_touch", "unpinned_first_touch", "local", "remote", "unpinned_page", "unpinned_thread", "unpinned_both"] as const;
export type Metric = (typeof METRIC_KEYS)[number];
export type Metrics = Record<Metric, number>;

/** A source line: function, file and line as the DWARF line table names them ("" and 0 without). */
export interface Location {
  function: string;
  file: string;
  line: number;
  metrics: Metrics;
}

export interface Mapping {
  kind?: string;
  file?: string;
  metrics: Metrics;
}

export interface Binding {
  time_s: number;
  cpus: string;
  nodes: number[];
  via?: string;
}

export interface Thread {
  tid: number;
  pid: number;
  comm?: string;
  nodes: number[];
  metrics: Metrics;
  binding_log: Binding[];
}

/** An allocation site: the line whose calls mapped the memory, and what they mapped. */
export interface Allocation {
  function?: string;
  file?: string;
  line?: number;
  kind?: string;
  calls?: number;
  bytes?: number;
  metrics: Metrics;
}

export interface AccessMatrix {
  thread_nodes: number[];
  page_nodes: number[];
  counts: number[][];
}

export interface Profile {
  command: string[];
  exit_status?: number;
  signal?: string;
  duration_s: number;
  nodes: number[];
  numa_balancing: boolean;
  notes: string[];
  samples: number;
  lost: number;
  huge_pages: number;
  /** sampled accesses counted neither local nor remote (handled after the program exited); 0 in older profiles */
  accesses_node_unknown: number;
  totals: Metrics;
  access_matrix: AccessMatrix;
  locations: Location[];
  mappings: Mapping[];
  threads: Thread[];
  /** absent when the syscall tracepoints were not available */
  allocations?: Allocation[];
}


/** asMetrics reads the seven metrics; a missing one is 0. */
export function asMetrics(v: unknown): Metrics {
  const o = J.obj(v);
  const n = (k: Metric) => J.numOr(o[k], 0);
  return {
    first_touch: n("first_touch"),
    unpinned_first_touch: n("unpinned_first_touch"),
    local: n("local"),
    remote: n("remote"),
    unpinned_page: n("unpinned_page"),
    unpinned_thread: n("unpinned_thread"),
    unpinned_both: n("unpinned_both"),
  };
}

function asLocation(v: unknown): Location | undefined {
  if (!J.isObj(v)) return undefined;
  return { function: J.strOr(v.function, ""), file: J.strOr(v.file, ""), line: J.numOr(v.line, 0), metrics: asMetrics(v.metrics) };
}

function asThread(v: unknown): Thread | undefined {
  if (!J.isObj(v)) return undefined;
  return {
    tid: J.numOr(v.tid, 0),
    pid: J.numOr(v.pid, 0),
    comm: J.str(v.comm),
    nodes: J.numbers(v.nodes),
    metrics: asMetrics(v.metrics),
    binding_log: J.list(v.binding_log, (b) => (J.isObj(b) ? { time_s: J.numOr(b.time_s, 0), cpus: J.strOr(b.cpus, ""), nodes: J.numbers(b.nodes), via: J.str(b.via) } : undefined)),
  };
}

function asAllocation(v: unknown): Allocation | undefined {
  if (!J.isObj(v)) return undefined;
  return { function: J.str(v.function), file: J.str(v.file), line: J.num(v.line), kind: J.str(v.kind), calls: J.num(v.calls), bytes: J.num(v.bytes), metrics: asMetrics(v.metrics) };
}

/** asProfile recognises a profile (a JSON object with an access matrix) and reads it; null otherwise. */
export function asProfile(v: unknown): Profile | null {
  if (!J.isObj(v) || !J.isObj(v.access_matrix)) return null;
  if (v.locations !== undefined && !Array.isArray(v.locations)) return null;
  return readProfile(v);
}

/** readProfile reads a profile the server sent (what it cannot read counts as absent). */
export function readProfile(x: unknown): Profile {
  const v = J.obj(x);
  const m = J.obj(v.access_matrix);
  return {
    command: J.strings(v.command),
    exit_status: J.num(v.exit_status),
    signal: J.str(v.signal),
    duration_s: J.numOr(v.duration_s, 0),
    nodes: J.numbers(v.nodes),
    numa_balancing: !!J.bool(v.numa_balancing),
    notes: J.strings(v.notes),
    samples: J.numOr(v.samples, 0),
    lost: J.numOr(v.lost, 0),
    huge_pages: J.numOr(v.huge_pages, 0),
    accesses_node_unknown: J.numOr(v.accesses_node_unknown, 0),
    totals: asMetrics(v.totals),
    access_matrix: { thread_nodes: J.numbers(m.thread_nodes), page_nodes: J.numbers(m.page_nodes), counts: J.list(m.counts, (r): number[] => (Array.isArray(r) ? r.map((x: unknown) => J.numOr(x, 0)) : [])) },
    locations: J.list(v.locations, asLocation),
    mappings: J.list(v.mappings, (x) => (J.isObj(x) ? { kind: J.str(x.kind), file: J.str(x.file), metrics: asMetrics(x.metrics) } : undefined)),
    threads: J.list(v.threads, asThread),
    allocations: J.optList(v.allocations, asAllocation),
  };
}

// ---------------------------------------------------------------- experiment report

/** A five-number summary of one event's per-node totals. */
export interface Distribution {
  min: number;
  q1: number;
  median: number;
  q3: number;
  max: number;
  max_node: string;
  max_share: number;
  outlier: boolean;
}

export interface Factor {
  name: string;
  levels: string[];
}

/** A row of the ANOVA table; a statistic that is not finite is null. */
export interface Term {
  name: string;
  ss: number | null;
  dof: number | null;
  ms: number | null;
  f: number | null;
  p: number | null;
  f_crit: number | null;
  percent_variation: number;
}

export interface SSDoF {
  ss: number | null;
  dof: number | null;
  ms: number | null;
  percent_variation: number;
}

export interface LevelEffect {
  levels: string[];
  estimate: number;
  low: number;
  high: number;
  significant: boolean;
}

export interface Contrast {
  factor: string;
  a: string;
  b: string;
  estimate: number | null;
  low: number | null;
  high: number | null;
  significant: boolean;
}

/** The analysis of one response (stats.Result). */
export interface Anova {
  log: boolean;
  replications: number | null;
  n: number | null;
  confidence: number;
  mean: number | null;
  mean_ci: { low: number | null; high: number | null };
  terms: Term[];
  error: SSDoF;
  total: SSDoF;
  error_term?: string;
  term_effects: { term: string; effects: LevelEffect[] }[];
  contrasts: Contrast[];
  residuals: { levels: string[]; predicted: number; residual: number }[];
  qq: { normal: number; residual: number }[];
  diagnostics: { qq_correlation: number | null };
  verdicts: string[];
}

export interface ResponseAnalysis {
  response: string;
  anova?: Anova;
  error?: string;
}

export interface Comparison {
  base: string;
  other: string;
  speedup: number | null;
  events: { event: string; base: number | null; other: number | null; change_percent: number | null }[];
}

export interface RegimeDistribution {
  regime: string;
  event: string;
  per_node: Record<string, number>;
  distribution?: Distribution;
}

export interface Analysis {
  name: string;
  factors: Factor[];
  measured: number;
  warmups: number;
  missing: number;
  failed: number;
  responses: ResponseAnalysis[];
  comparisons: Comparison[];
  distributions: RegimeDistribution[];
}

/** One run of the results file (its "run" lines). */
export interface Run {
  run: number;
  warmup: boolean;
  rep: number;
  levels: Record<string, string>;
  events: Record<string, { per_node: Record<string, number>; distribution?: Distribution }>;
}

export interface Experiment {
  analysis: Analysis;
  runs: Run[];
}

const nul = J.numOrNull;
const perNode = (v: unknown) => J.record(v, J.num);

function asDistribution(v: unknown): Distribution | undefined {
  if (!J.isObj(v)) return undefined;
  return {
    min: J.numOr(v.min, NaN),
    q1: J.numOr(v.q1, NaN),
    median: J.numOr(v.median, NaN),
    q3: J.numOr(v.q3, NaN),
    max: J.numOr(v.max, NaN),
    max_node: J.strOr(v.max_node, ""),
    max_share: J.numOr(v.max_share, NaN),
    outlier: !!J.bool(v.outlier),
  };
}

function asSSDoF(v: unknown): SSDoF {
  const o = J.obj(v);
  return { ss: nul(o.ss), dof: nul(o.dof), ms: nul(o.ms), percent_variation: J.numOr(o.percent_variation, NaN) };
}

function asAnova(v: unknown): Anova | undefined {
  if (!J.isObj(v)) return undefined;
  const ci = J.obj(v.mean_ci);
  return {
    log: !!J.bool(v.log),
    replications: nul(v.replications),
    n: nul(v.n),
    confidence: J.numOr(v.confidence, NaN),
    mean: nul(v.mean),
    mean_ci: { low: nul(ci.low), high: nul(ci.high) },
    terms: J.list(v.terms, (t) => (J.isObj(t) ? { ...asSSDoF(t), name: J.strOr(t.name, ""), f: nul(t.f), p: nul(t.p), f_crit: nul(t.f_crit) } : undefined)),
    error: asSSDoF(v.error),
    total: asSSDoF(v.total),
    error_term: J.str(v.error_term),
    term_effects: J.list(v.term_effects, (te) =>
      J.isObj(te)
        ? {
            term: J.strOr(te.term, ""),
            effects: J.list(te.effects, (e) =>
              J.isObj(e) ? { levels: J.strings(e.levels), estimate: J.numOr(e.estimate, NaN), low: J.numOr(e.low, NaN), high: J.numOr(e.high, NaN), significant: !!J.bool(e.significant) } : undefined,
            ),
          }
        : undefined,
    ),
    contrasts: J.list(v.contrasts, (c) =>
      J.isObj(c) ? { factor: J.strOr(c.factor, ""), a: J.strOr(c.a, ""), b: J.strOr(c.b, ""), estimate: nul(c.estimate), low: nul(c.low), high: nul(c.high), significant: !!J.bool(c.significant) } : undefined,
    ),
    residuals: J.list(v.residuals, (r) => (J.isObj(r) ? { levels: J.strings(r.levels), predicted: J.numOr(r.predicted, NaN), residual: J.numOr(r.residual, NaN) } : undefined)),
    qq: J.list(v.qq, (q) => (J.isObj(q) ? { normal: J.numOr(q.normal, NaN), residual: J.numOr(q.residual, NaN) } : undefined)),
    diagnostics: { qq_correlation: nul(J.obj(v.diagnostics).qq_correlation) },
    verdicts: J.strings(v.verdicts),
  };
}

function asAnalysis(v: J.Obj): Analysis {
  return {
    name: J.strOr(v.name, ""),
    // experiment.Factor had no JSON tags once: its keys were "Name" and "Levels".
    factors: J.list(v.factors, (f) => (J.isObj(f) ? { name: J.str(f.name) ?? J.strOr(f.Name, ""), levels: J.strings(f.levels ?? f.Levels) } : undefined)),
    measured: J.numOr(v.measured, 0),
    warmups: J.numOr(v.warmups, 0),
    missing: J.numOr(v.missing, 0),
    failed: J.numOr(v.failed, 0),
    responses: J.list(v.responses, (r) => (J.isObj(r) ? { response: J.strOr(r.response, ""), anova: asAnova(r.anova), error: J.str(r.error) } : undefined)),
    comparisons: J.list(v.comparisons, (c) =>
      J.isObj(c)
        ? {
            base: J.strOr(c.base, ""),
            other: J.strOr(c.other, ""),
            speedup: nul(c.speedup),
            events: J.list(c.events, (r) => (J.isObj(r) ? { event: J.strOr(r.event, ""), base: nul(r.base), other: nul(r.other), change_percent: nul(r.change_percent) } : undefined)),
          }
        : undefined,
    ),
    distributions: J.list(v.distributions, (d) =>
      J.isObj(d) ? { regime: J.strOr(d.regime, ""), event: J.strOr(d.event, ""), per_node: perNode(d.per_node), distribution: asDistribution(d.distribution) } : undefined,
    ),
  };
}

function asRun(v: unknown): Run | undefined {
  if (!J.isObj(v)) return undefined;
  return {
    run: J.numOr(v.run, 0),
    warmup: !!J.bool(v.warmup),
    rep: J.numOr(v.rep, 0),
    levels: J.record(v.levels, J.str),
    events: J.record(v.events, (e) => (J.isObj(e) ? { per_node: perNode(e.per_node), distribution: asDistribution(e.distribution) } : undefined)),
  };
}

/** asExperiment recognises an experiment report, `--web`'s payload or `--format json`'s analysis, and reads it; null otherwise. */
export function asExperiment(v: unknown): Experiment | null {
  if (!J.isObj(v)) return null;
  if (J.isObj(v.analysis) && Array.isArray(v.analysis.responses) && Array.isArray(v.runs)) return readExperiment(v);
  if (Array.isArray(v.responses) && Array.isArray(v.factors) && typeof v.measured === "number") return { analysis: asAnalysis(v), runs: [] };
  return null;
}

/** readExperiment reads `--web`'s payload as the server sent it: {analysis, runs}. */
export function readExperiment(x: unknown): Experiment {
  const v = J.obj(x);
  return { analysis: asAnalysis(J.obj(v.analysis)), runs: J.list(v.runs, asRun) };
}

// ---------------------------------------------------------------- bench

/**
 * A node id as a document names it. numascope writes integers, but a file
 * from disk can hold anything: ids are kept as they are and shown as text.
 */
export type NodeID = number | string;

/** A value per initiator (row) and target (column); null where not measured (or not rated). */
export type Cells = (number | null)[][];

/** One of bench's matrices (docs/bench.md, "JSON"): latency_ns or bandwidth_mbs. */
export interface BenchMatrix {
  /** the bandwidth kernel ("copy", "triad", ...); absent for latency */
  kernel?: string;
  initiators: NodeID[];
  targets: NodeID[];
  /** latency: the median; bandwidth: the best (STREAM's choice) */
  matrix: Cells;
  median?: Cells;
  min?: Cells;
  max?: Cells;
  /** every counted repeat per cell */
  samples?: number[][][];
  /** the CPUs each initiator's threads ran on */
  cpus?: NodeID[][];
  size_bytes?: number;
  bytes_counted?: number;
  steps?: number;
  repeat?: number;
  /** the share of each buffer backed by transparent huge pages */
  huge_fraction?: Cells;
}

/** A pair not measured, and why. */
export interface BenchSkip {
  kind: string;
  initiator: NodeID;
  target: NodeID;
  reason: string;
}

/** Where one measurement's pages were. */
export interface BenchPlacementPair {
  kind: string;
  initiator: NodeID;
  target: NodeID;
  fraction_on_target: number | null;
  pages_checked?: number;
}

export interface BenchPlacement {
  min_fraction_on_target: number | null;
  pairs: BenchPlacementPair[];
}

/**
 * The conditions of the run. The known keys are typed; any other scalar
 * key (bench only ever adds keys) is kept in `other`, to be listed as it is.
 */
export interface BenchConditions {
  cpu_model?: string;
  kernel?: string;
  governors: string[];
  thp?: string;
  numa_balancing?: string;
  numa_balancing_off_during_run?: boolean;
  virtual?: boolean;
  hypervisor?: string;
  sys_vendor?: string;
  product_name?: string;
  root?: boolean;
  kernel_isa?: string;
  /** what else ran during the run (bench.HostLoad); null: /proc/stat was unreadable; absent from older files */
  host_load?: HostLoad | null;
  other: [string, string][];
}

/** What else ran on the machine during a bench run (conditions.host_load). */
export interface HostLoad {
  other_runnable_mean: number | null;
  other_runnable_max: number | null;
  online_cpus: number | null;
  loadavg_1m: number | null;
  /** null: the kernel does not count steal time */
  steal_percent: number | null;
  busy: boolean;
}

/** A pair without a rated value, and why. */
export interface RatedMissing {
  initiator: NodeID;
  target: NodeID;
  reason: string;
}

/** A measured inversion of the kernel's tier order (a target in a slower tier measured better). */
export interface TierContradiction {
  kind: string;
  initiator: NodeID;
  /** the target in the faster tier, which measured worse (faster_tier_node) */
  faster?: NodeID;
  /** the target in the slower tier, which measured better (slower_tier_node) */
  slower?: NodeID;
  text: string;
}

/**
 * What the firmware promises beside what was measured (docs/bench.md,
 * "Rated against measured"): the kernel's HMAT values per initiator and
 * target, aligned with the measured matrices by node id, the memory tier of
 * each target, and the check of the tier order against the measurements.
 */
export interface BenchRated {
  /** absent: the cells are in the measured matrices' order */
  initiators?: NodeID[];
  targets?: NodeID[];
  /** why no pair has a rated value (no HMAT) */
  not_reported?: string;
  read_latency_ns?: Cells;
  write_latency_ns?: Cells;
  read_bandwidth_mbs?: Cells;
  write_bandwidth_mbs?: Cells;
  missing: RatedMissing[];
  /** each target's memory tier (the N of memory_tierN), by node id; null: in none */
  memory_tiers: Record<string, NodeID | null>;
  tier_order?: { checked: boolean; why?: string; contradictions: TierContradiction[] };
  rated_order?: { checked: boolean; why?: string; contradictions: RatedContradiction[] };
}

/** A measured inversion of the rated (HMAT) order: the target rated worse measured better. */
export interface RatedContradiction {
  kind: string;
  initiator: NodeID;
  /** rated_better_node, rated_worse_node */
  better?: NodeID;
  worse?: NodeID;
  text: string;
}

/** A node as the document's topology has it: what labels the heatmaps. */
export interface BenchNode {
  id: NodeID;
  cpus: NodeID[];
  /** SLIT distances to the other nodes, by node id */
  distances: Record<string, NodeID>;
  cpuless?: boolean;
  /** the memory tier (/sys/devices/virtual/memory_tiering) */
  memory_tier?: NodeID;
}

/** Loaded latency of one pair: the latency at each injected bandwidth. */
export interface LoadedPair {
  initiator: NodeID;
  target: NodeID;
  bandwidth_mbs: (number | null)[];
  latency_ns: (number | null)[];
  /** why the pair has no curve (its arrays then null, read as empty) */
  reason?: string;
}

/** The loaded-latency section (`numascope bench --kind loaded`, or all). */
export interface BenchLoaded {
  kernel?: string;
  /** the read:write mix the injectors ran, when kernel is "mix" */
  mix?: string;
  pairs: LoadedPair[];
}

/** One CPU pair of core-to-core latency (`numascope bench --kind c2c`). */
export interface C2CPair {
  a: NodeID;
  b: NodeID;
  class: string;
  line_node?: NodeID;
  median_ns: number | null;
  min_ns: number | null;
  max_ns: number | null;
  /** how many repeats the median is of: the length of samples in the file; numascope view sends the count ("repeats") in place of the samples, which the page does not draw */
  repeats: number;
}

/** One class of pairs (SMT siblings, same LLC, same node, cross node): the median of its pairs' medians, and their range. */
export interface C2CClass {
  class: string;
  pairs: number;
  median_ns: number | null;
  min_ns: number | null;
  max_ns: number | null;
}

/** Core-to-core latency, CPU by CPU (c2c_ns): the matrix in the order of cpus, symmetric, null on the diagonal and where not measured. */
export interface BenchC2C {
  cpus: NodeID[];
  /** each CPU's node, last-level cache (index) and package:core, in the order of cpus (absent: unknown) */
  nodes: (NodeID | undefined)[];
  llcs: (NodeID | undefined)[];
  cores: (NodeID | undefined)[];
  matrix: Cells;
  classes: C2CClass[];
  pairs: C2CPair[];
  /** the node the contended line was bound to; null: each pair's first CPU's node */
  line_node: NodeID | null;
  repeat?: number;
  sample?: number;
  pairs_total?: number;
  method?: string;
}

/** The node × node roll-up of core-to-core latency (c2c_node_ns). */
export interface BenchC2CNodes {
  initiators: NodeID[];
  targets: NodeID[];
  matrix: Cells;
  line_node: NodeID | null;
}

/** A document written by `numascope bench --format json` (docs/bench.md). */
export interface BenchDocument {
  latency_ns?: BenchMatrix;
  bandwidth_mbs?: BenchMatrix;
  placement: BenchPlacement;
  rated: BenchRated;
  conditions: BenchConditions;
  skipped: BenchSkip[];
  notes: string[];
  /** the nodes with their distances and tiers, when the document has them */
  topology?: BenchNode[];
  loaded?: BenchLoaded;
  c2c_ns?: BenchC2C;
  c2c_node_ns?: BenchC2CNodes;
}

const nodeID = (v: unknown): NodeID | undefined => J.scalar(v);
const nodeIDs = (v: unknown): NodeID[] => J.list(v, nodeID);

/** cells reads a matrix of numbers and nulls: anything else in a cell counts as null. */
function cells(v: unknown): Cells {
  return J.list(v, (r) => (Array.isArray(r) ? r.map(J.numOrNull) : undefined));
}

const optCells = (v: unknown): Cells | undefined => (Array.isArray(v) ? cells(v) : undefined);

function asBenchMatrix(v: unknown): BenchMatrix | undefined {
  if (!J.isObj(v)) return undefined;
  return {
    kernel: J.str(v.kernel),
    initiators: nodeIDs(v.initiators),
    targets: nodeIDs(v.targets),
    matrix: cells(v.matrix),
    median: optCells(v.median),
    min: optCells(v.min),
    max: optCells(v.max),
    samples: J.optList(v.samples, (r) => J.list(r, (c) => (Array.isArray(c) ? J.numbers(c) : undefined))),
    cpus: J.optList(v.cpus, (r) => (Array.isArray(r) ? nodeIDs(r) : undefined)),
    size_bytes: J.num(v.size_bytes),
    bytes_counted: J.num(v.bytes_counted),
    steps: J.num(v.steps),
    repeat: J.num(v.repeat),
    huge_fraction: optCells(v.huge_fraction),
  };
}

/** orderCheck reads rated's tier_order or rated_order: each contradiction's kind, initiator and text, and its nodes by nodes(). */
function orderCheck<N>(v: unknown, nodes: (c: J.Obj) => N): { checked: boolean; why?: string; contradictions: ({ kind: string; initiator: NodeID; text: string } & N)[] } | undefined {
  if (!J.isObj(v)) return undefined;
  return {
    checked: !!J.bool(v.checked),
    why: J.str(v.why),
    contradictions: J.list(v.contradictions, (c) => {
      if (!J.isObj(c)) return undefined;
      const initiator = nodeID(c.initiator);
      return initiator === undefined ? undefined : { kind: J.strOr(c.kind, ""), initiator, text: J.strOr(c.text, ""), ...nodes(c) };
    }),
  };
}

function asRated(v: unknown): BenchRated {
  const o = J.obj(v);
  return {
    initiators: J.optList(o.initiators, nodeID),
    targets: J.optList(o.targets, nodeID),
    not_reported: J.str(o.not_reported),
    read_latency_ns: optCells(o.read_latency_ns),
    write_latency_ns: optCells(o.write_latency_ns),
    read_bandwidth_mbs: optCells(o.read_bandwidth_mbs),
    write_bandwidth_mbs: optCells(o.write_bandwidth_mbs),
    missing: J.list(o.missing, (x) => {
      if (!J.isObj(x)) return undefined;
      const initiator = nodeID(x.initiator),
        target = nodeID(x.target);
      return initiator === undefined || target === undefined ? undefined : { initiator, target, reason: J.strOr(x.reason, "") };
    }),
    memory_tiers: J.record(o.memory_tiers, (x) => (x === null ? null : nodeID(x))),
    tier_order: orderCheck(o.tier_order, (c) => ({ faster: nodeID(c.faster_tier_node), slower: nodeID(c.slower_tier_node) })),
    rated_order: orderCheck(o.rated_order, (c) => ({ better: nodeID(c.rated_better_node), worse: nodeID(c.rated_worse_node) })),
  };
}

const KNOWN_CONDITIONS = new Set(["cpu_model", "kernel", "governors", "thp", "numa_balancing", "numa_balancing_off_during_run", "virtual", "hypervisor", "sys_vendor", "product_name", "root", "kernel_isa", "host_load"]);

function asConditions(v: unknown): BenchConditions {
  const o = J.obj(v);
  const other: [string, string][] = [];
  for (const [k, x] of Object.entries(o)) {
    if (KNOWN_CONDITIONS.has(k)) continue;
    if (typeof x === "string" || typeof x === "number" || typeof x === "boolean") other.push([k, String(x)]);
    else if (Array.isArray(x)) other.push([k, J.list(x, J.scalar).join(", ")]);
  }
  return {
    cpu_model: J.str(o.cpu_model),
    kernel: J.str(o.kernel),
    governors: J.strings(o.governors),
    thp: J.str(o.thp),
    numa_balancing: J.str(o.numa_balancing),
    numa_balancing_off_during_run: J.bool(o.numa_balancing_off_during_run),
    virtual: J.bool(o.virtual),
    hypervisor: J.str(o.hypervisor),
    sys_vendor: J.str(o.sys_vendor),
    product_name: J.str(o.product_name),
    root: J.bool(o.root),
    kernel_isa: J.str(o.kernel_isa),
    host_load: asHostLoad(o),
    other,
  };
}

function asHostLoad(o: Record<string, unknown>): HostLoad | null | undefined {
  if (!("host_load" in o)) return undefined;
  const h = o.host_load;
  if (!J.isObj(h)) return null;
  return {
    other_runnable_mean: J.numOrNull(h.other_runnable_mean),
    other_runnable_max: J.numOrNull(h.other_runnable_max),
    online_cpus: J.numOrNull(h.online_cpus),
    loadavg_1m: J.numOrNull(h.loadavg_1m),
    steal_percent: J.numOrNull(h.steal_percent),
    busy: J.bool(h.busy) ?? false,
  };
}

/**
 * asBenchNodes reads the topology's nodes (numascope topology's shape), with a tier per node from
 * memory_tier, else from the list of tiers in the topology (as numascope writes it) or at the top
 * level (older files).
 */
function asBenchNodes(topology: unknown, tiers: unknown): BenchNode[] | undefined {
  const t = J.obj(topology);
  if (!Array.isArray(t.nodes)) return undefined;
  // memory_tiers: [{"id": 4, "nodes": [0, 1]}, ...] ("tier" for "id" in older files).
  const tierOf = new Map<string, NodeID>();
  const obj = (x: unknown) => (J.isObj(x) ? x : undefined);
  for (const x of [...J.list(tiers, obj), ...J.list(t.memory_tiers, obj)]) {
    const id = nodeID(x.tier) ?? nodeID(x.id);
    if (id !== undefined) for (const n of nodeIDs(x.nodes)) tierOf.set(String(n), id);
  }
  return J.list(t.nodes, (n) => {
    if (!J.isObj(n)) return undefined;
    const id = nodeID(n.id);
    if (id === undefined) return undefined;
    return { id, cpus: nodeIDs(n.cpus), distances: J.record(n.distances, nodeID), cpuless: J.bool(n.cpuless), memory_tier: nodeID(n.memory_tier) ?? tierOf.get(String(id)) };
  });
}

function asLoaded(v: unknown): BenchLoaded | undefined {
  if (!J.isObj(v)) return undefined;
  return {
    kernel: J.str(v.kernel),
    mix: J.str(v.mix),
    pairs: J.list(v.pairs, (p) => {
      if (!J.isObj(p)) return undefined;
      const initiator = nodeID(p.initiator),
        target = nodeID(p.target);
      if (initiator === undefined || target === undefined) return undefined;
      const nums = (x: unknown) => (Array.isArray(x) ? x.map(J.numOrNull) : []);
      return { initiator, target, bandwidth_mbs: nums(p.bandwidth_mbs), latency_ns: nums(p.latency_ns), reason: J.str(p.reason) };
    }),
  };
}

/** asC2C reads c2c_ns: the lists per CPU are aligned with cpus (what a list lacks is undefined). */
function asC2C(v: unknown): BenchC2C | undefined {
  if (!J.isObj(v)) return undefined;
  const cpus = nodeIDs(v.cpus);
  const per = (x: unknown): (NodeID | undefined)[] => {
    const l = Array.isArray(x) ? x : [];
    return cpus.map((_, k) => nodeID(l[k]));
  };
  return {
    cpus,
    nodes: per(v.nodes),
    llcs: per(v.llcs),
    cores: per(v.cores),
    matrix: cells(v.matrix),
    classes: J.list(v.classes, (c) => (J.isObj(c) ? { class: J.strOr(c.class, ""), pairs: J.numOr(c.pairs, 0), median_ns: J.numOrNull(c.median_ns), min_ns: J.numOrNull(c.min_ns), max_ns: J.numOrNull(c.max_ns) } : undefined)),
    pairs: J.list(v.pairs, (p) => {
      if (!J.isObj(p)) return undefined;
      const a = nodeID(p.a),
        b = nodeID(p.b);
      if (a === undefined || b === undefined) return undefined;
      return { a, b, class: J.strOr(p.class, ""), line_node: nodeID(p.line_node), median_ns: J.numOrNull(p.median_ns), min_ns: J.numOrNull(p.min_ns), max_ns: J.numOrNull(p.max_ns), repeats: J.num(p.repeats) ?? J.numbers(p.samples).length };
    }),
    line_node: nodeID(v.line_node) ?? null,
    repeat: J.num(v.repeat),
    sample: J.num(v.sample),
    pairs_total: J.num(v.pairs_total),
    method: J.str(v.method),
  };
}

function asC2CNodes(v: unknown): BenchC2CNodes | undefined {
  if (!J.isObj(v)) return undefined;
  return { initiators: nodeIDs(v.initiators), targets: nodeIDs(v.targets), matrix: cells(v.matrix), line_node: nodeID(v.line_node) ?? null };
}

/** asBench recognises a bench document (an object with latency_ns, bandwidth_mbs, loaded or c2c_ns, and no access matrix) and reads it; null otherwise. */
export function asBench(v: unknown): BenchDocument | null {
  if (!J.isObj(v) || J.isObj(v.access_matrix)) return null;
  if (!J.isObj(v.latency_ns) && !J.isObj(v.bandwidth_mbs) && !J.isObj(v.loaded) && !J.isObj(v.c2c_ns)) return null;
  return readBench(v);
}

/** readBench reads a bench document the server sent (what it cannot read counts as absent). */
export function readBench(x: unknown): BenchDocument {
  const v = J.obj(x);
  const p = J.obj(v.placement);
  return {
    latency_ns: asBenchMatrix(v.latency_ns),
    bandwidth_mbs: asBenchMatrix(v.bandwidth_mbs),
    placement: {
      min_fraction_on_target: J.numOrNull(p.min_fraction_on_target),
      pairs: J.list(p.pairs, (q) => {
        if (!J.isObj(q)) return undefined;
        const initiator = nodeID(q.initiator),
          target = nodeID(q.target);
        if (initiator === undefined || target === undefined) return undefined;
        return { kind: J.strOr(q.kind, ""), initiator, target, fraction_on_target: J.numOrNull(q.fraction_on_target), pages_checked: J.num(q.pages_checked) };
      }),
    },
    rated: asRated(v.rated),
    conditions: asConditions(v.conditions),
    skipped: J.list(v.skipped, (s) => {
      if (!J.isObj(s)) return undefined;
      const initiator = nodeID(s.initiator),
        target = nodeID(s.target);
      if (initiator === undefined || target === undefined) return undefined;
      return { kind: J.strOr(s.kind, ""), initiator, target, reason: J.strOr(s.reason, "") };
    }),
    notes: J.strings(v.notes),
    topology: asBenchNodes(v.topology, v.memory_tiers),
    loaded: asLoaded(v.loaded),
    c2c_ns: asC2C(v.c2c_ns),
    c2c_node_ns: asC2CNodes(v.c2c_node_ns),
  };
}
