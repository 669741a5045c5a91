// The bench page (`numascope view bench.json`, or the document loaded from
// disk): the latency and bandwidth matrices of `numascope bench` as
// heatmaps, rows the initiators, columns the targets, on a perceptual
// colour scale (viridis, yellow = better), with the NUMA distance, memory
// tier and CPU-less targets labelled where the document has them, the rated
// values beside the measured ones, the spread on hover; the placement and
// the conditions of the run; the core-to-core latency (src/c2c.ts) and the
// loaded-latency curves (uPlot) when the document has them. Every name is the document's, so it goes
// into the page as text (src/dom.ts). The page shown is this module's own
// state.

import uPlot from "uplot";
import type { BenchDocument, BenchMatrix, BenchNode, BenchRated, BenchSkip, Cells, HostLoad, NodeID } from "./documents";
import { el } from "./dom";
import { bytes, int, num, percent, ranges, si } from "./format";
import { distinctColors } from "./colors";
import { c2cSection } from "./c2c";

/** The bench page: the document shown, its file, and the loaded-latency plot drawn from it (destroyed when the page is redrawn). */
interface BenchPage {
  doc: BenchDocument;
  file: string;
  loaded: uPlot | null;
}

/** the page shown, or null */
let shown: BenchPage | null = null;

/** showBenchPage draws doc into root, in place of the page shown before. */
export function showBenchPage(root: HTMLElement, doc: BenchDocument, file: string): void {
  shown?.loaded?.destroy();
  shown = { doc, file, loaded: null };
  renderBench(root, shown);
}

/** benchPlot is the loaded-latency plot shown, or null (for the tests). */
export function benchPlot(): uPlot | null {
  return shown?.loaded ?? null;
}

/** The two matrices: how each is read and coloured. */
interface Kind {
  key: "latency_ns" | "bandwidth_mbs";
  /** rated's read and write values for this matrix */
  read: "read_latency_ns" | "read_bandwidth_mbs";
  write: "write_latency_ns" | "write_bandwidth_mbs";
  /** the `kind` of skipped and placement entries */
  kind: "latency" | "bandwidth";
  title: string;
  /** what follows a value formatted by fmt in a sentence (fmt of a bandwidth has its unit) */
  suffix: string;
  /** higher values are better */
  higherBetter: boolean;
  /** a value as a cell prints it */
  fmt: (v: number) => string;
}

const KINDS: Kind[] = [
  { key: "latency_ns", read: "read_latency_ns", write: "write_latency_ns", kind: "latency", title: "Idle latency (ns)", suffix: " ns", higherBetter: false, fmt: (v) => num(v) },
  { key: "bandwidth_mbs", read: "read_bandwidth_mbs", write: "write_bandwidth_mbs", kind: "bandwidth", title: "Bandwidth", suffix: "", higherBetter: true, fmt: (v) => `${si(v * 1e6)}B/s` },
];

// viridis, at eleven even steps: perceptually uniform, readable in grey and
// by the colour-blind. 0 is the worst value of a matrix, 1 the best.
const VIRIDIS = ["#440154", "#482475", "#414487", "#355f8d", "#2a788e", "#21918c", "#22a884", "#44bf70", "#7ad151", "#bddf26", "#fde725"];

/** viridis is the colour at x in [0, 1]. */
export function viridis(x: number): string {
  const t = Math.min(1, Math.max(0, Number.isFinite(x) ? x : 0)) * (VIRIDIS.length - 1);
  const i = Math.min(Math.floor(t), VIRIDIS.length - 2);
  const f = t - i;
  const rgb = (h: string) => [1, 3, 5].map((k) => parseInt(h.slice(k, k + 2), 16));
  const a = rgb(VIRIDIS[i]),
    b = rgb(VIRIDIS[i + 1]);
  return `rgb(${a.map((c, k) => Math.round(c + (b[k] - c) * f)).join(" ")})`;
}

/** pairKey names a pair of one kind, the way the document's lists are looked up. */
const pairKey = (kind: string, i: NodeID, t: NodeID) => `${kind}|${String(i)}|${String(t)}`;

/** at is m[r][c], or null. */
const at = (m: Cells | undefined, r: number, c: number): number | null => m?.[r]?.[c] ?? null;

/** What the matrices share: the topology's nodes, the skipped pairs and the placement, by node and pair. */
interface Lookup {
  nodes: Map<string, BenchNode>;
  skipped: Map<string, BenchSkip>;
  placement: Map<string, { fraction: number | null; pages?: number }>;
  initiators: Set<string>;
  /** why a pair has no rated value, by pair ("rated" kind) */
  unrated: Map<string, string>;
  /** a node's memory tier: the topology's, else rated's */
  tier: (id: NodeID) => NodeID | undefined;
  /** the tier-order and rated-order contradictions a pair takes part in, by pair */
  contra: Map<string, Contra[]>;
}

/**
 * Contra is a pair's part in a contradiction: of the tier order (the slower
 * tier's node measured better, or the faster tier's worse) or of the rated
 * order (the node rated worse measured better, or the one rated better worse).
 */
interface Contra {
  role: "slower" | "faster" | "underrated" | "overrated";
  /** the other node of the contradiction */
  other: NodeID;
  text: string;
}

/** What each role's cell says: its label, and the start of its line in the tooltip. */
const ROLES: Record<Contra["role"], { label: string; why: (other: NodeID) => string }> = {
  slower: { label: "⚠ slow tier won", why: (o) => `tier order contradicted (this node, in a slower tier, measured better than node ${o})` },
  faster: { label: "⚠ fast tier lost", why: (o) => `tier order contradicted (node ${o}, in a slower tier, measured better than this one)` },
  underrated: { label: "⚠ underrated", why: (o) => `rated order contradicted (this node, rated worse, measured better than node ${o})` },
  overrated: { label: "⚠ overrated", why: (o) => `rated order contradicted (node ${o}, rated worse, measured better than this one)` },
};

function lookup(doc: BenchDocument): Lookup {
  const nodes = new Map((doc.topology ?? []).map((n): [string, BenchNode] => [String(n.id), n]));
  const skipped = new Map<string, BenchSkip>();
  for (const s of doc.skipped) {
    skipped.set(pairKey(s.kind, s.initiator, s.target), s);
    // A reason for one kind stands in for the other's when that has none.
    for (const k of ["latency", "bandwidth"]) if (!skipped.has(pairKey(k, s.initiator, s.target))) skipped.set(pairKey(k, s.initiator, s.target), s);
  }
  const placement = new Map<string, { fraction: number | null; pages?: number }>();
  for (const p of doc.placement.pairs) placement.set(pairKey(p.kind, p.initiator, p.target), { fraction: p.fraction_on_target, pages: p.pages_checked });
  const initiators = new Set([...(doc.latency_ns?.initiators ?? []), ...(doc.bandwidth_mbs?.initiators ?? [])].map(String));
  const unrated = new Map(doc.rated.missing.map((x): [string, string] => [pairKey("rated", x.initiator, x.target), x.reason]));
  const tier = (id: NodeID): NodeID | undefined => {
    const rt = doc.rated.memory_tiers;
    return nodes.get(String(id))?.memory_tier ?? (Object.hasOwn(rt, String(id)) ? (rt[String(id)] ?? undefined) : undefined);
  };
  const contra = new Map<string, Contra[]>();
  const add = (kind: string, i: NodeID, t: NodeID, c: Contra) => {
    const k = pairKey(kind, i, t);
    contra.set(k, [...(contra.get(k) ?? []), c]);
  };
  for (const c of doc.rated.tier_order?.contradictions ?? []) {
    if (c.faster === undefined || c.slower === undefined) continue;
    add(c.kind, c.initiator, c.slower, { role: "slower", other: c.faster, text: c.text });
    add(c.kind, c.initiator, c.faster, { role: "faster", other: c.slower, text: c.text });
  }
  for (const c of doc.rated.rated_order?.contradictions ?? []) {
    if (c.better === undefined || c.worse === undefined) continue;
    add(c.kind, c.initiator, c.worse, { role: "underrated", other: c.better, text: c.text });
    add(c.kind, c.initiator, c.better, { role: "overrated", other: c.worse, text: c.text });
  }
  return { nodes, skipped, placement, initiators, unrated, tier, contra };
}

/** cpuless says whether a target has no CPUs: true or false from the topology, undefined without one. */
function cpuless(n: BenchNode | undefined): boolean | undefined {
  if (!n) return undefined;
  return n.cpuless ?? n.cpus.length === 0;
}

/** rated aligns one of rated's matrices with the measured one by node id (or by position when rated names none). */
function rated(r: BenchRated, cellsOf: Cells | undefined, m: BenchMatrix): Cells | undefined {
  if (!cellsOf || !cellsOf.flat().some((v) => v !== null)) return undefined;
  if (!r.initiators || !r.targets) return cellsOf;
  const ri = new Map(r.initiators.map((id, k): [string, number] => [String(id), k]));
  const rt = new Map(r.targets.map((id, k): [string, number] => [String(id), k]));
  return m.initiators.map((i) => m.targets.map((t) => {
    const a = ri.get(String(i)),
      b = rt.get(String(t));
    return a === undefined || b === undefined ? null : at(cellsOf, a, b);
  }));
}

/** renderBench draws the bench page of page.doc into root. */
function renderBench(root: HTMLElement, page: BenchPage): void {
  const doc = page.doc;
  const look = lookup(doc);
  root.replaceChildren();
  root.append(
    el("h2", {}, "numascope bench ", el("span", { class: "file" }, page.file)),
    el(
      "p",
      { class: "muted" },
      "Rows: initiators, the nodes whose CPUs ran the threads. Columns: targets, the nodes the memory was bound to (CPU-less memory included). Hover a cell for its spread, placement and rated value.",
    ),
  );
  const grid = el("div", { class: "bgrid" });
  for (const k of KINDS) grid.append(matrixFigure(k, doc, look));
  root.append(grid);
  // Core-to-core latency, when measured: beside the memory matrices, on their colour scale.
  const c2c = c2cSection(doc, viridis);
  if (c2c) root.append(c2c);
  root.append(runPanel(doc));
  root.append(loadedSection(page));
}

/** matrixFigure is one matrix's heatmap with its legend, or a line saying it was not measured. */
function matrixFigure(k: Kind, doc: BenchDocument, look: Lookup): HTMLElement {
  const m = doc[k.key];
  const fig = el("figure", { class: "bfig", "data-kind": k.kind });
  if (!m) {
    fig.append(el("h3", {}, k.title), el("p", { class: "muted none" }, `Not in this document: it was measured without ${k.kind} (numascope bench --kind ${k.kind}, or all, measures it).`));
    return fig;
  }
  const stat = k.higherBetter ? `best of ${m.repeat ?? "the"} repeats` : `median of ${m.repeat ?? "the"} repeats`;
  fig.append(el("h3", {}, k.title, el("small", {}, ` ${m.kernel ? `${m.kernel} kernel, ` : ""}${stat}${m.size_bytes ? `, ${bytes(m.size_bytes)} per measurement` : ""}`)));
  const rate = rated(doc.rated, doc.rated[k.read], m);
  const rateW = rated(doc.rated, doc.rated[k.write], m);
  const vals = m.matrix.flat().filter((v): v is number => v !== null && Number.isFinite(v));
  const lo = vals.reduce((a, b) => Math.min(a, b), vals[0] ?? 0),
    hi = vals.reduce((a, b) => Math.max(a, b), vals[0] ?? 0);
  /** good is how good v is, 0 (the matrix's worst) to 1 (its best). */
  const good = (v: number) => (hi === lo ? 1 : k.higherBetter ? (v - lo) / (hi - lo) : (hi - v) / (hi - lo));

  const tbl = el("table", { class: "bmatrix", "data-kind": k.kind });
  const head = el("tr", {}, el("th", { class: "corner" }, "initiator ↓ \\ target →"));
  for (const t of m.targets) head.append(targetHeader(t, look));
  tbl.append(el("thead", {}, head));
  const body = el("tbody");
  const detail = el("div", { class: "bdetail", "aria-live": "polite" }, "Hover a cell for its details.");
  m.initiators.forEach((i, r) => {
    const tr = el("tr", { "data-row": String(i) }, initiatorHeader(i, m.cpus?.[r], look));
    m.targets.forEach((t, c) => {
      const td = cell(k, m, r, c, i, t, { read: at(rate, r, c), write: at(rateW, r, c), any: !!rate }, look, good);
      td.onmouseenter = () => detail.replaceChildren(...td.title.split("\n").map((l, n) => (n ? el("div", {}, l) : el("strong", {}, l))));
      tr.append(td);
    });
    body.append(tr);
  });
  tbl.append(body);
  const contradicted = [...(doc.rated.tier_order?.contradictions ?? []), ...(doc.rated.rated_order?.contradictions ?? [])].some((c) => c.kind === k.kind);
  fig.append(tbl, legend(k, lo, hi, vals.length > 0, !!rate, !!doc.topology, contradicted), detail);
  return fig;
}

function targetHeader(t: NodeID, look: Lookup): HTMLElement {
  const n = look.nodes.get(String(t));
  const th = el("th", { "data-col": String(t) }, `node ${t}`);
  const why: string[] = [`target node ${t}`];
  const tier = look.tier(t);
  if (tier !== undefined) {
    th.append(el("small", { class: "tier" }, `tier ${tier}`));
    why.push(`memory tier ${tier}`);
  }
  const less = cpuless(n);
  if (less) {
    th.classList.add("cpuless");
    th.append(el("small", { class: "nocpu" }, "no CPUs"));
    why.push("no CPUs (CXL, HBM or GPU memory): a target only");
  } else if (less === undefined && !look.initiators.has(String(t))) {
    th.classList.add("targetonly");
    th.append(el("small", { class: "nocpu" }, "target only"));
    why.push("not an initiator in this run: it has no CPUs, or --from left it out");
  }
  th.title = why.join("; ");
  return th;
}

function initiatorHeader(i: NodeID, cpus: NodeID[] | undefined, look: Lookup): HTMLElement {
  const th = el("th", { "data-row": String(i) }, `node ${i}`);
  const why: string[] = [`initiator node ${i}`];
  if (cpus?.length) {
    th.append(el("small", {}, `CPU ${ranges(cpus)}`));
    why.push(`threads on CPU ${ranges(cpus)}`);
  }
  const tier = look.tier(i);
  if (tier !== undefined) {
    th.append(el("small", { class: "tier" }, `tier ${tier}`));
    why.push(`memory tier ${tier}`);
  }
  th.title = why.join("; ");
  return th;
}

/** cell is one pair's cell: the value (or "not measured"), the rated value, the distance; the rest in its title. */
function cell(k: Kind, m: BenchMatrix, r: number, c: number, i: NodeID, t: NodeID, rt: { read: number | null; write: number | null; any: boolean }, look: Lookup, good: (v: number) => number): HTMLElement {
  const rate = rt.read;
  const v = at(m.matrix, r, c);
  const dist = look.nodes.get(String(i))?.distances;
  const d = dist && Object.hasOwn(dist, String(t)) ? dist[String(t)] : undefined;
  const td = el("td", { class: "cell", "data-row": String(i), "data-col": String(t), "data-value": v === null ? "null" : String(v) });
  const lines = [`node ${i} → node ${t}: ` + (v === null ? "not measured" : `${k.fmt(v)}${k.suffix} (${k.higherBetter ? "best" : "median"} of ${m.repeat ?? "the"} repeats)`)];
  if (v === null) {
    const s = look.skipped.get(pairKey(k.kind, i, t));
    const reason = s?.reason || "the document gives no reason";
    td.classList.add("null");
    td.dataset.reason = reason;
    td.append(el("span", { class: "v" }, "not measured"));
    lines.push(`why: ${reason}`);
  } else {
    const g = good(v);
    td.style.background = viridis(g);
    if (g > 0.55) td.classList.add("light");
    td.append(el("span", { class: "v" }, k.fmt(v)));
    const mn = at(m.min, r, c),
      mx = at(m.max, r, c),
      med = at(m.median, r, c);
    if (mn !== null && mx !== null) {
      td.dataset.min = String(mn);
      td.dataset.max = String(mx);
      lines.push(`spread: ${k.fmt(mn)} – ${k.fmt(mx)}${k.suffix}${k.higherBetter && med !== null ? `, median ${k.fmt(med)}` : ""}`);
    }
    const s = m.samples?.[r]?.[c];
    if (s?.length) lines.push(`${s.length} repeats: ${s.map(k.fmt).join(", ")}`);
    const h = at(m.huge_fraction, r, c);
    if (h !== null) lines.push(`huge pages: ${percent(100 * h)} of the buffer`);
    const p = look.placement.get(pairKey(k.kind, i, t));
    if (p) lines.push(`placement: ${p.fraction === null ? "–" : percent(100 * p.fraction)} of ${p.pages === undefined ? "the" : int(p.pages)} pages checked on node ${t}`);
    if (p && p.fraction !== null && p.fraction < 0.99) td.classList.add("misplaced");
  }
  if (rate !== null) {
    td.dataset.rated = String(rate);
    td.append(el("span", { class: "rated" }, `rated ${k.fmt(rate)}`));
    lines.push(`rated (HMAT) read: ${k.fmt(rate)}${k.suffix}` + (rt.write !== null ? `, write: ${k.fmt(rt.write)}${k.suffix}` : "") + (v !== null && rate ? `; measured is ${num(v / rate)}× rated read` : ""));
  } else if (rt.any) {
    const why = look.unrated.get(pairKey("rated", i, t));
    lines.push(`rated (HMAT): none${why ? `: ${why}` : ""}`);
  }
  if (d !== undefined) {
    td.append(el("span", { class: "dist" }, `d ${d}`));
    lines.push(`NUMA distance (SLIT): ${d}`);
  }
  const cs = look.contra.get(pairKey(k.kind, i, t));
  if (cs?.length) {
    // Marked in the cell, said in words in its title and the box under the heatmap.
    td.classList.add("contradicted");
    const roles = [...new Set(cs.map((c) => c.role))];
    td.dataset.contradiction = roles.join(" ");
    for (const r of roles) td.append(el("span", { class: "contra" }, ROLES[r].label));
    for (const c of cs) lines.push(`${ROLES[c.role].why(c.other)}: ${c.text}`);
  }
  td.title = lines.join("\n");
  return td;
}

/** legend says what the colours, the labels and the small print in a cell mean. */
function legend(k: Kind, lo: number, hi: number, measured: boolean, withRated: boolean, withTopology: boolean, contradicted: boolean): HTMLElement {
  const worst = k.higherBetter ? lo : hi,
    best = k.higherBetter ? hi : lo;
  const bar = el("span", { class: "bar" });
  bar.style.background = `linear-gradient(to right, ${VIRIDIS.join(", ")})`;
  const p = el(
    "div",
    { class: "blegend" },
    el("span", {}, measured ? `worse ${k.fmt(worst)}` : "worse"),
    bar,
    el("span", {}, measured ? `${k.fmt(best)} better` : "better"),
  );
  const notes = [k.higherBetter ? "Higher bandwidth is better (yellow)." : "Lower latency is better (yellow)."];
  notes.push("Grey: not measured (hover for why).");
  if (withRated) notes.push("rated: the kernel's HMAT read value for the pair.");
  if (withTopology) notes.push("d: the firmware's NUMA distance (SLIT; 10 is local).");
  if (contradicted)
    notes.push("⚠ red frame: the pair contradicts the kernel's memory-tier order (a node of a slower tier measured better than one of a faster tier) or the order of the HMAT ratings (a node rated worse measured better), beyond the spread of the repeats; hover, or see the lists below.");
  return el("div", {}, p, el("p", { class: "muted small" }, notes.join(" ")));
}

/** hostLoad is conditions.host_load in the words of bench's text output (bench.HostLoad.describe). */
function hostLoad(h: HostLoad | null): string {
  if (h === null) return "not read (/proc/stat was unreadable)";
  const f = (v: number | null, digits: number) => (v === null ? "–" : v.toFixed(digits));
  const la = h.loadavg_1m === null ? "" : `; load average ${f(h.loadavg_1m, 2)} at the start`;
  const steal = h.steal_percent === null ? "steal time not counted by this kernel" : `steal time ${f(h.steal_percent, 1)}% of the CPUs' time`;
  return `${h.busy ? "busy: " : ""}${f(h.other_runnable_mean, 1)} other tasks runnable on average (at most ${f(h.other_runnable_max, 0)}, ${f(h.online_cpus, 0)} CPUs online${la}), ${steal}`;
}

/** runPanel lists the placement, the conditions of the run, the notes and the pairs not measured. */
function runPanel(doc: BenchDocument): HTMLElement {
  const c = doc.conditions;
  const facts = el("dl", { class: "facts" });
  const fact = (name: string, value: string, cls = "") => facts.append(el("dt", {}, name), el("dd", { "data-fact": name, class: cls }, value));
  const minFrac = doc.placement.min_fraction_on_target;
  fact("placement", minFrac === null ? "–" : `${percent(100 * minFrac)} of the pages on their target at worst (min fraction on target ${minFrac})`, minFrac !== null && minFrac < 0.99 ? "bad" : "");
  if (doc.placement.pairs.length) fact("pairs verified", `${doc.placement.pairs.length} buffers, ${int(doc.placement.pairs.reduce((a, p) => a + (p.pages_checked ?? 0), 0))} pages checked (move_pages)`);
  fact("CPU", c.cpu_model || "–");
  fact("kernel", c.kernel || "–");
  fact("virtualisation", c.virtual === undefined ? "–" : c.virtual ? `virtual machine${c.hypervisor ? ` (${c.hypervisor})` : ""}: figures are only as real as the hypervisor's placement` : "none seen (bare metal)", c.virtual ? "warn" : "");
  if (c.sys_vendor || c.product_name) fact("system", [c.sys_vendor, c.product_name].filter(Boolean).join(" "));
  fact("THP", c.thp || "–");
  fact("governor", c.governors.length ? c.governors.join(", ") : "none reported (no cpufreq)");
  const bal = c.numa_balancing === undefined || c.numa_balancing === "" ? "none in this kernel" : `kernel.numa_balancing=${c.numa_balancing}, ${c.numa_balancing === "0" ? "off" : c.numa_balancing_off_during_run ? "turned off for the run" : "left on during the run"}`;
  fact("NUMA balancing", bal, c.numa_balancing && c.numa_balancing !== "0" && !c.numa_balancing_off_during_run ? "warn" : "");
  if (c.root !== undefined) fact("root", c.root ? "yes" : "no");
  if (c.kernel_isa) fact("kernels", c.kernel_isa);
  if (c.host_load !== undefined) fact("host load", hostLoad(c.host_load), c.host_load?.busy ? "warn" : "");
  for (const [k, v] of c.other) fact(k, v);
  const r = doc.rated;
  const nRated = (x: Cells | undefined) => (x ?? []).flat().filter((v) => v !== null).length;
  if (r.not_reported) fact("rated (HMAT)", `none: ${r.not_reported}`);
  else if (r.read_latency_ns || r.read_bandwidth_mbs)
    fact("rated (HMAT)", `read latency for ${nRated(r.read_latency_ns)} pairs, read bandwidth for ${nRated(r.read_bandwidth_mbs)}${r.missing.length ? `; ${r.missing.length} ${r.missing.length > 1 ? "pairs" : "pair"} without (hover a cell for why)` : ""}`);
  const to = r.tier_order;
  if (to) {
    const n = to.contradictions.length;
    fact("tier order", !to.checked ? `not checked${to.why ? `: ${to.why}` : ""}` : n ? `contradicted by ${n} measurement${n > 1 ? "s" : ""} (below)` : "as measured: no contradiction", n ? "bad" : "");
  }

  const ro = r.rated_order;
  if (ro?.checked || ro?.contradictions.length) {
    const n = ro.contradictions.length;
    fact("rated order", n ? `contradicted by ${n} measurement${n > 1 ? "s" : ""} (below)` : "as measured: no contradiction", n ? "bad" : "");
  }

  const box = el("section", { class: "brun" }, el("h3", {}, "Placement and conditions of the run"), facts);
  const list = (title: string, cls: string, xs: { kind: string; initiator: NodeID; text: string }[]) => {
    if (xs.length) box.append(el("h3", {}, title), el("ul", { class: `hints notes ${cls}` }, ...xs.map((x) => el("li", { "data-kind": x.kind, "data-initiator": String(x.initiator) }, x.text))));
  };
  list("Tier order contradicted", "contradictions", to?.contradictions ?? []);
  list("Rated (HMAT) order contradicted", "rated-contradictions", ro?.contradictions ?? []);
  if (doc.notes.length) box.append(el("h3", {}, "Notes"), el("ul", { class: "hints notes" }, ...doc.notes.map((n) => el("li", {}, n))));
  if (doc.skipped.length) {
    const tb = el("tbody");
    for (const s of doc.skipped) tb.append(el("tr", {}, el("td", {}, s.kind), el("td", {}, s.kind === "c2c" ? `CPU ${s.initiator} ↔ CPU ${s.target}` : `node ${s.initiator} → node ${s.target}`), el("td", { class: "reason" }, s.reason)));
    box.append(el("h3", {}, "Not measured"), el("table", { class: "skipped" }, el("thead", {}, el("tr", {}, el("th", {}, "kind"), el("th", {}, "pair"), el("th", {}, "why"))), tb));
  }
  return box;
}

/** loadedSection draws the loaded-latency curves (latency against injected bandwidth, one per pair), or says the document has none. */
function loadedSection(page: BenchPage): HTMLElement {
  const sec = el("section", { class: "bloaded" }, el("h3", {}, "Loaded latency"));
  const l = page.doc.loaded;
  if (!l) {
    sec.append(el("p", { class: "muted none" }, "Not in this document: it was measured without loaded latency (numascope bench --kind loaded, or all, measures it). When a document has a loaded section, its latency against injected bandwidth is drawn here, one curve per pair."));
    return sec;
  }
  // A pair without a curve (its initiator had no CPU left to inject, or it was not measured) has empty arrays and a reason.
  const drawn = l.pairs.filter((p) => p.bandwidth_mbs.some((b) => b !== null) && p.latency_ns.some((v) => v !== null));
  const missing = l.pairs.filter((p) => !drawn.includes(p));
  const why = missing.length
    ? el("ul", { class: "hints loaded-missing" }, ...missing.map((p) => el("li", { "data-pair": `${p.initiator}-${p.target}` }, `node ${p.initiator} → node ${p.target}: no curve${p.reason ? `: ${p.reason}` : ""}`)))
    : null;
  if (!drawn.length) {
    sec.append(el("p", { class: "muted none" }, "No pair of this document has a loaded-latency curve."));
    if (why) sec.append(why);
    return sec;
  }
  const kernel = l.kernel ? ` (${l.kernel}${l.mix ? ` ${l.mix}` : ""} kernel)` : "";
  sec.append(el("p", { class: "muted" }, `Latency of one pair while the other CPUs inject bandwidth at stepped rates${kernel}: one curve per initiator → target pair. Click a pair in the legend to hide it.`));
  if (why) sec.append(why);
  // Each pair has its own bandwidths: uPlot.join aligns them on one x axis (null elsewhere; spanGaps draws through).
  const tables = drawn.map((p): uPlot.AlignedData => {
    const pts: [number, number][] = [];
    p.bandwidth_mbs.forEach((b, k) => {
      const y = p.latency_ns[k];
      if (b !== null && y !== null && y !== undefined && Number.isFinite(b) && Number.isFinite(y)) pts.push([b, y]);
    });
    pts.sort((a, b) => a[0] - b[0]);
    // One latency per bandwidth: uPlot.join keys on x.
    const uniq = pts.filter((q, k) => k === 0 || q[0] !== pts[k - 1][0]);
    return [uniq.map((q) => q[0]), uniq.map((q) => q[1])];
  });
  const data = uPlot.join(tables);
  const box = el("div", { class: "loaded-plot", "data-pairs": String(drawn.length) });
  sec.append(box);
  const width = Math.max(420, Math.min(960, document.body.clientWidth - 80));
  // One plot: its curves' colours are kept ΔE 20 apart (src/colors.ts).
  const colors = distinctColors(drawn.length);
  const opts: uPlot.Options = {
    width,
    height: 340,
    scales: { x: { time: false } },
    axes: [
      { label: "injected bandwidth", values: (_u, vs) => vs.map((v) => `${si(v * 1e6)}B/s`) },
      { label: "latency (ns)", values: (_u, vs) => vs.map((v) => num(v)) },
    ],
    series: [
      { label: "bandwidth", value: (_u, v) => (v === null ? "–" : `${si(v * 1e6)}B/s`) },
      ...drawn.map(
        (p, k): uPlot.Series => ({
          label: `node ${p.initiator} → node ${p.target}`,
          stroke: colors[k],
          width: 2,
          spanGaps: true,
          points: { show: true, size: 5 },
          value: (_u, v) => (v === null ? "–" : `${num(v)} ns`),
        }),
      ),
    ],
  };
  page.loaded = new uPlot(opts, data, box);
  return sec;
}
