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
