// The core-to-core latency section of the bench page (`numascope bench
// --kind c2c`): the classes (SMT siblings, same last-level cache, same node,
// cross node), the node × node matrix, and a CPU × CPU heatmap with the CPUs
// sorted by node, then last-level cache, then core, so that the machine's
// blocks show as squares along the diagonal; lines mark where a node or a
// cache changes. Every name and number is the document's and goes into the
// page as text (src/dom.ts). The bench page (src/bench.ts) appends what
// c2cSection returns and owns nothing of it: the section is drawn from the
// document alone, and its colour scale is the page's, passed in.

import type { BenchC2C, BenchC2CNodes, BenchDocument, C2CPair, Cells, NodeID } from "./documents";
import { el } from "./dom";
import { extent } from "./extent";
import { int, num } from "./format";

/** A colour scale: the colour at x in [0, 1], 1 the best. */
export type Scale = (x: number) => string;

/** What the classes are called on the page. */
const CLASS_NAMES: Record<string, string> = {
  "smt-siblings": "SMT siblings (one core)",
  "same-llc": "same last-level cache",
  "same-node": "same node, other LLC",
  "cross-node": "cross node",
};

const className = (c: string) => CLASS_NAMES[c] ?? c;

/** lineWhere says where the contended line's memory was. */
const lineWhere = (n: NodeID | null) => (n === null ? "the line on each pair's first CPU's node" : `the line on node ${n} (--line-node)`);

/** order is the CPUs' positions in the heatmap: by node, then LLC, then core, then CPU; unknown keys last. */
export function order(m: BenchC2C): number[] {
  const key = (v: NodeID | undefined): [number, number | string] => (v === undefined ? [2, ""] : typeof v === "number" ? [0, v] : [1, v]);
  const cmp = (x: NodeID | undefined, y: NodeID | undefined): number => {
    const [a, p] = key(x),
      [b, q] = key(y);
    if (a !== b) return a - b;
    if (typeof p === "number" && typeof q === "number") return p - q;
    return String(p).localeCompare(String(q), "en", { numeric: true });
  };
  return m.cpus
    .map((_, k) => k)
    .sort((i, j) => cmp(m.nodes[i], m.nodes[j]) || cmp(m.llcs[i], m.llcs[j]) || cmp(m.cores[i], m.cores[j]) || cmp(m.cpus[i], m.cpus[j]));
}

/** c2cSection is the core-to-core latency section of doc, or null when doc has none. */
export function c2cSection(doc: BenchDocument, scale: Scale): HTMLElement | null {
  const m = doc.c2c_ns;
  if (!m) return null;
  const which = m.sample ? `a sample of ${int(m.sample)} of the ${int(m.pairs_total ?? 0)} pairs` : `${int(m.pairs.length)} pairs`;
  const sec = el(
    "section",
    { class: "bc2c" },
    el("h3", {}, "Core-to-core latency (ns)", el("small", {}, ` half the round trip of one cache line, median of ${m.repeat ?? "the"} repeats per pair; ${which}; ${lineWhere(m.line_node)}`)),
  );
  if (m.method) sec.append(el("p", { class: "muted small" }, m.method));
  sec.append(classTable(m));
  const nodes = doc.c2c_node_ns;
  if (nodes) sec.append(nodeTable(nodes, scale));
  sec.append(heatmap(m, scale));
  return sec;
}

function classTable(m: BenchC2C): HTMLElement {
  const tb = el("tbody");
  for (const c of m.classes)
    tb.append(el("tr", { "data-class": c.class }, el("td", {}, className(c.class)), el("td", { class: "n" }, int(c.pairs)), el("td", { class: "n" }, num(c.median_ns)), el("td", { class: "n" }, `${num(c.min_ns)} – ${num(c.max_ns)}`)));
  if (!m.classes.length) tb.append(el("tr", {}, el("td", { colspan: "4", class: "muted" }, "no pair was measured")));
  return el("table", { class: "c2cclasses" }, el("thead", {}, el("tr", {}, el("th", {}, "class"), el("th", {}, "pairs"), el("th", {}, "median (ns)"), el("th", {}, "range over the pairs"))), tb);
}

/** range is the least and greatest number of cells (0, 0 when none). */
function range(c: Cells): [number, number] {
  const v = c.flat().filter((x): x is number => x !== null && Number.isFinite(x));
  return v.length ? extent(v) : [0, 0];
}

/** shade is a cell's colour: lower latency is better (1). */
const shade = (scale: Scale, lo: number, hi: number, v: number) => scale(hi === lo ? 1 : (hi - v) / (hi - lo));

function nodeTable(n: BenchC2CNodes, scale: Scale): HTMLElement {
  const [lo, hi] = range(n.matrix);
  const head = el("tr", {}, el("th", { class: "corner" }, "node ↓ \\ node →"));
  for (const t of n.targets) head.append(el("th", {}, `node ${t}`));
  const body = el("tbody");
  n.initiators.forEach((i, r) => {
    const tr = el("tr", {}, el("th", {}, `node ${i}`));
    n.targets.forEach((t, c) => {
      const v = n.matrix[r]?.[c] ?? null;
      const td = el("td", { class: "cell", "data-row": String(i), "data-col": String(t), "data-value": v === null ? "null" : String(v) }, v === null ? "–" : num(v));
      if (v === null) td.classList.add("null");
      else td.style.background = shade(scale, lo, hi, v);
      td.title = `node ${i} ↔ node ${t}: ${v === null ? "no pair measured" : `${num(v)} ns, the median of the pairs' medians${i === t ? " (SMT siblings left out)" : ""}`}; ${lineWhere(n.line_node)}`;
      tr.append(td);
    });
    body.append(tr);
  });
  return el("figure", { class: "bfig" }, el("h3", {}, "Per node pair", el("small", {}, ` beside the memory latency: ${lineWhere(n.line_node)}`)), el("table", { class: "c2cnodes" }, el("thead", {}, head), body));
}

/** heatmap is the CPU × CPU matrix in order(m), with a readout of the cell hovered. */
function heatmap(m: BenchC2C, scale: Scale): HTMLElement {
  const pos = order(m);
  const [lo, hi] = range(m.matrix);
  const byPair = new Map<string, C2CPair>();
  for (const p of m.pairs) {
    byPair.set(`${p.a}|${p.b}`, p);
    byPair.set(`${p.b}|${p.a}`, p);
  }
  const small = pos.length > 24;
  const tbl = el("table", { class: `c2cmatrix${small ? " small" : ""}`, "data-cpus": String(pos.length) });
  const head = el("tr", {}, el("th", { class: "corner" }, "CPU"));
  // A line where the node (or, within a node, the LLC) changes.
  const edge = (k: number): string => {
    if (k === 0) return "";
    const a = pos[k - 1],
      b = pos[k];
    if (m.nodes[a] !== m.nodes[b]) return "node-edge";
    return m.llcs[a] !== m.llcs[b] ? "llc-edge" : "";
  };
  pos.forEach((j, k) => head.append(el("th", { class: edge(k), "data-cpu": String(m.cpus[j]), title: cpuTitle(m, j) }, String(m.cpus[j]))));
  const body = el("tbody");
  const readout = el("div", { class: "bdetail c2creadout", "aria-live": "polite" }, "Hover a cell for the pair's figures.");
  pos.forEach((i, r) => {
    const tr = el("tr", { class: edge(r) }, el("th", { "data-cpu": String(m.cpus[i]), title: cpuTitle(m, i) }, String(m.cpus[i])));
    pos.forEach((j, c) => {
      const v = m.matrix[i]?.[j] ?? null;
      const a = m.cpus[i],
        b = m.cpus[j];
      const td = el("td", { class: `cell ${edge(c)}`.trim(), "data-a": String(a), "data-b": String(b), "data-value": v === null ? "null" : String(v) });
      const lines = [`CPU ${a} ↔ CPU ${b}: ${i === j ? "the same CPU" : v === null ? "not measured" : `${num(v)} ns`}`];
      if (v === null) td.classList.add("null");
      else {
        td.style.background = shade(scale, lo, hi, v);
        if (!small) td.append(num(v));
        const p = byPair.get(`${a}|${b}`);
        if (p) {
          td.dataset.class = p.class;
          lines.push(`${className(p.class)}; median of ${int(p.repeats)} repeats, ${num(p.min_ns)} – ${num(p.max_ns)} ns${p.line_node === undefined ? "" : `; line on node ${p.line_node}`}`);
        }
      }
      lines.push(cpuTitle(m, i), cpuTitle(m, j));
      td.title = lines.join("\n");
      td.onmouseenter = () => readout.replaceChildren(...lines.map((l, n) => (n ? el("div", {}, l) : el("strong", {}, l))));
      tr.append(td);
    });
    body.append(tr);
  });
  tbl.append(el("thead", {}, head), body);
  return el(
    "figure",
    { class: "bfig c2cfig" },
    el("h3", {}, "CPU × CPU", el("small", {}, " sorted by node, then last-level cache, then core; lines where the node (thick) or the LLC (thin) changes; yellow is faster")),
    el("div", { class: "c2cscroll" }, tbl),
    readout,
  );
}

/** cpuTitle is what a CPU is: its node, LLC and core. */
function cpuTitle(m: BenchC2C, k: number): string {
  const part = (name: string, v: NodeID | undefined) => (v === undefined ? [] : [`${name} ${v}`]);
  return [`CPU ${m.cpus[k]}`, ...part("node", m.nodes[k]), ...part("LLC", m.llcs[k]), ...part("core", m.cores[k])].join(", ");
}
