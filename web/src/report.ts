// The experiment page: an experiment's analysis (`numascope experiment
// --web`, or its `--format json` output loaded from disk) drawn as small SVG
// charts: effects with confidence intervals as bars, the per-node
// distributions as boxplots (one box per run, and per regime), the QQ plot
// and the residuals against the predicted values, with the ANOVA table and
// the verdicts. Plain SVG keeps the bundle small: uPlot draws time series,
// and none of these is one.

import type { Anova, Distribution, Experiment, Run } from "./documents";
import { el } from "./dom";
import { extent } from "./extent";
import { num, percent } from "./format";

const svgNS = "http://www.w3.org/2000/svg";

function svg(tag: string, attrs: Record<string, string | number> = {}, text?: string): SVGElement {
  const e = document.createElementNS(svgNS, tag) as SVGElement;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

function titled(e: SVGElement, text: string): SVGElement {
  e.appendChild(svg("title", {}, text));
  return e;
}

let measurer: CanvasRenderingContext2D | null = null;

/** textWidth is how wide text is drawn in the charts' font (11px, style.css's .chart text), so that labels get the room they need. */
function textWidth(text: string): number {
  measurer ??= document.createElement("canvas").getContext("2d");
  if (!measurer) return text.length * 7;
  measurer.font = `11px ${getComputedStyle(document.body).fontFamily || "system-ui, sans-serif"}`;
  return measurer.measureText(text).width;
}

/**
 * responseUnit is the unit of a response: wall_time in seconds, rate:EVENT per second;
 * total:EVENT and exit_status are counts ("").
 */
export function responseUnit(response: string): string {
  if (response === "wall_time") return "s";
  if (response.startsWith("rate:")) return "/s";
  return "";
}

/** within centres a tick's label on x, moved in where it would otherwise cross the chart's edge at 0 or w: a wide number at the last tick is drawn whole, ending at the edge. */
function within(x: number, label: string, w: number): number {
  const half = textWidth(label) / 2 + 1;
  return Math.min(Math.max(x, half), w - half);
}

/** ticks gives about n round numbers covering [lo, hi]. */
function ticks(lo: number, hi: number, n = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((k) => k * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(Math.abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

/** pad widens [lo, hi] a little, and makes an empty range non-empty. */
function pad(lo: number, hi: number): [number, number] {
  if (!(hi > lo)) {
    const d = Math.abs(lo) * 0.1 || 1;
    return [lo - d, hi + d];
  }
  const d = (hi - lo) * 0.06;
  return [lo - d, hi + d];
}

/** effectsChart draws every level's effect as a bar from zero with its confidence interval. */
function effectsChart(res: Anova): SVGElement {
  const rows: { term: string; level: string; e: Anova["term_effects"][number]["effects"][number] }[] = [];
  for (const te of res.term_effects) for (const e of te.effects) rows.push({ term: te.term, level: e.levels.join(":"), e });
  // The labels' column is as wide as the widest label ("policy:mb = first-touch:4").
  const L = Math.ceil(Math.max(60, ...rows.map((r) => textWidth(`${r.term} = ${r.level}`))) + 16),
    W = L + 410,
    R = 16,
    row = 22,
    top = 8,
    H = top + rows.length * row + 34;
  let lo = 0,
    hi = 0;
  for (const r of rows) {
    lo = Math.min(lo, r.e.low, r.e.estimate);
    hi = Math.max(hi, r.e.high, r.e.estimate);
  }
  [lo, hi] = pad(lo, hi);
  const x = (v: number) => L + ((v - lo) / (hi - lo)) * (W - L - R);
  const s = svg("svg", { class: "chart effects", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img" });
  s.appendChild(titled(svg("g"), `effects with ${Math.round(res.confidence * 100)}% confidence intervals`));
  const yAxis = top + rows.length * row + 4;
  for (const t of ticks(lo, hi)) {
    s.appendChild(svg("line", { class: "grid", x1: x(t), x2: x(t), y1: top, y2: yAxis }));
    s.appendChild(svg("text", { class: "tick", x: within(x(t), num(t), W), y: yAxis + 14, "text-anchor": "middle" }, num(t)));
  }
  s.appendChild(svg("line", { class: "zero", x1: x(0), x2: x(0), y1: top, y2: yAxis }));
  rows.forEach((r, i) => {
    const y = top + i * row;
    const sig = !!r.e.significant;
    const g = svg("g", { class: "effect" + (sig ? " significant" : ""), "data-term": r.term, "data-level": r.level });
    g.appendChild(svg("text", { class: "label", x: L - 8, y: y + row / 2 + 4, "text-anchor": "end" }, `${r.term} = ${r.level}`));
    const x0 = x(0),
      x1 = x(r.e.estimate);
    // At least a pixel wide, on the effect's side of zero.
    const w = Math.max(1, Math.abs(x1 - x0));
    g.appendChild(svg("rect", { class: "bar", x: r.e.estimate < 0 ? x0 - w : x0, y: y + 4, width: w, height: row - 8 }));
    const cy = y + row / 2;
    g.appendChild(svg("line", { class: "ci", x1: x(r.e.low), x2: x(r.e.high), y1: cy, y2: cy }));
    for (const v of [r.e.low, r.e.high]) g.appendChild(svg("line", { class: "ci", x1: x(v), x2: x(v), y1: cy - 5, y2: cy + 5 }));
    titled(g, `${r.term} = ${r.level}: effect ${num(r.e.estimate)}, CI [${num(r.e.low)}, ${num(r.e.high)}]${sig ? " (excludes 0)" : ""}`);
    s.appendChild(g);
  });
  return s;
}

interface Pt {
  x: number;
  y: number;
  title: string;
}

/** scatter draws points with axes, and an optional reference line; id makes its clip path's id unique in the page. */
function scatter(id: string, cls: string, pts: Pt[], xl: string, yl: string, line?: (x: number) => number): SVGElement {
  const W = 360,
    H = 260,
    L = 58,
    B = 36,
    T = 8,
    R = 10;
  const [x0, x1] = pad(...extent(pts.map((p) => p.x)));
  const [y0, y1] = pad(...extent(pts.map((p) => p.y)));
  const X = (v: number) => L + ((v - x0) / (x1 - x0)) * (W - L - R);
  const Y = (v: number) => H - B - ((v - y0) / (y1 - y0)) * (H - B - T);
  const s = svg("svg", { class: `chart ${cls}`, viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img" });
  for (const t of ticks(x0, x1)) {
    s.appendChild(svg("line", { class: "grid", x1: X(t), x2: X(t), y1: T, y2: H - B }));
    s.appendChild(svg("text", { class: "tick", x: within(X(t), num(t), W), y: H - B + 14, "text-anchor": "middle" }, num(t)));
  }
  for (const t of ticks(y0, y1)) {
    s.appendChild(svg("line", { class: "grid", x1: L, x2: W - R, y1: Y(t), y2: Y(t) }));
    s.appendChild(svg("text", { class: "tick", x: L - 4, y: Y(t) + 4, "text-anchor": "end" }, num(t)));
  }
  s.appendChild(svg("text", { class: "axis", x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle" }, xl));
  s.appendChild(svg("text", { class: "axis", x: 12, y: (T + H - B) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(T + H - B) / 2})` }, yl));
  if (line) {
    // Clipped to the plotting area: a steep line would cross the axes' labels.
    const clip = `clip-${id}-${cls}`;
    s.appendChild(svg("clipPath", { id: clip })).appendChild(svg("rect", { x: L, y: T, width: W - L - R, height: H - B - T }));
    s.appendChild(svg("line", { class: "ref", x1: X(x0), x2: X(x1), y1: Y(line(x0)), y2: Y(line(x1)), "clip-path": `url(#${clip})` }));
  }
  for (const p of pts) s.appendChild(titled(svg("circle", { class: "point", cx: X(p.x), cy: Y(p.y), r: 4 }), p.title));
  return s;
}

/** qqLine is the line through the QQ points' first and third quartiles, as R's qqline draws. */
function qqLine(qq: Anova["qq"]): ((x: number) => number) | undefined {
  if (qq.length < 2) return undefined;
  const q = (arr: number[], p: number) => {
    const s = [...arr].sort((a, b) => a - b);
    const h = (s.length - 1) * p,
      i = Math.floor(h);
    return i + 1 < s.length ? s[i] + (h - i) * (s[i + 1] - s[i]) : s[i];
  };
  const nx = qq.map((p) => p.normal),
    ry = qq.map((p) => p.residual);
  const xa = q(nx, 0.25),
    xb = q(nx, 0.75),
    ya = q(ry, 0.25),
    yb = q(ry, 0.75);
  if (xb === xa) return undefined;
  const m = (yb - ya) / (xb - xa);
  return (x) => ya + m * (x - xa);
}

export interface Box {
  label: string;
  dist: Distribution;
  perNode: Record<string, number>;
  run?: number;
}

/** boxplot draws one box per entry: whiskers min to max, the quartiles, the median and every node's value. */
export function boxplot(title: string, boxes: Box[]): SVGElement {
  // The run labels are rotated by 40°: below the axis and left of the first box they need
  // their width's sine and cosine.
  const lw = Math.max(0, ...boxes.map((b) => textWidth(b.label)));
  const sin = Math.sin((40 * Math.PI) / 180),
    cos = Math.cos((40 * Math.PI) / 180);
  const bw = 46,
    L = Math.ceil(Math.max(74, lw * cos - bw / 2 + 8)),
    T = 10,
    B = Math.ceil(Math.max(64, lw * sin + 24)),
    H = 186 + B,
    W = L + boxes.length * bw + 12;
  let lo = Infinity,
    hi = -Infinity;
  for (const b of boxes) {
    lo = Math.min(lo, b.dist.min);
    hi = Math.max(hi, b.dist.max);
  }
  [lo, hi] = pad(lo, hi);
  const Y = (v: number) => H - B - ((v - lo) / (hi - lo)) * (H - B - T);
  const s = svg("svg", { class: "chart boxplot", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "data-event": title });
  for (const t of ticks(lo, hi, 4)) {
    s.appendChild(svg("line", { class: "grid", x1: L, x2: W - 8, y1: Y(t), y2: Y(t) }));
    s.appendChild(svg("text", { class: "tick", x: L - 4, y: Y(t) + 4, "text-anchor": "end" }, num(t)));
  }
  boxes.forEach((b, i) => {
    const d = b.dist;
    const cx = L + i * bw + bw / 2;
    const g = svg("g", { class: "box" + (d.outlier ? " outlier" : ""), "data-label": b.label, "data-max-node": d.max_node ?? "" });
    if (b.run !== undefined) g.setAttribute("data-run", String(b.run));
    g.appendChild(svg("line", { class: "whisker", x1: cx, x2: cx, y1: Y(d.min), y2: Y(d.max) }));
    for (const v of [d.min, d.max]) g.appendChild(svg("line", { class: "whisker", x1: cx - 8, x2: cx + 8, y1: Y(v), y2: Y(v) }));
    g.appendChild(svg("rect", { class: "iqr", x: cx - 14, width: 28, y: Y(d.q3), height: Math.max(1, Y(d.q1) - Y(d.q3)) }));
    g.appendChild(svg("line", { class: "median", x1: cx - 14, x2: cx + 14, y1: Y(d.median), y2: Y(d.median) }));
    for (const [node, v] of Object.entries(b.perNode ?? {})) {
      const isMax = node === d.max_node;
      g.appendChild(titled(svg("circle", { class: "node" + (isMax ? " max" : ""), cx: cx + 18, cy: Y(v), r: 3, "data-node": node }), `node ${node}: ${num(v)}`));
    }
    g.appendChild(svg("text", { class: "label", x: cx, y: H - B + 12, "text-anchor": "end", transform: `rotate(-40 ${cx} ${H - B + 12})` }, b.label));
    titled(g, `${b.label}: min ${num(d.min)}, q1 ${num(d.q1)}, median ${num(d.median)}, q3 ${num(d.q3)}, max ${num(d.max)} (node ${d.max_node}, ${Math.round(100 * d.max_share)}% of the total)${d.outlier ? ", an outlier" : ""}`);
    s.appendChild(g);
  });
  return s;
}

function table(cls: string, head: string[], rows: string[][]): HTMLTableElement {
  const t = el("table", { class: cls });
  const tr = el("tr");
  for (const h of head) tr.appendChild(el("th", {}, h));
  t.appendChild(el("thead")).appendChild(tr);
  const tb = t.appendChild(el("tbody"));
  for (const r of rows) {
    const row = el("tr");
    for (const c of r) row.appendChild(el("td", {}, c));
    tb.appendChild(row);
  }
  return t;
}

function anovaTable(res: Anova): HTMLTableElement {
  const rows = res.terms.map((t) => [t.name, num(t.ss), String(t.dof), num(t.ms), num(t.f), num(t.p), num(t.f_crit), percent(t.percent_variation)]);
  rows.push([res.error_term ? `error (${res.error_term})` : "error", num(res.error.ss), String(res.error.dof), num(res.error.ms), "", "", "", percent(res.error.percent_variation)]);
  rows.push(["total", num(res.total.ss), String(res.total.dof), "", "", "", "", "100%"]);
  return table("anova", ["term", "SS", "dof", "MS", "F", "p", `F-crit ${Math.round(res.confidence * 100)}%`, "% variation"], rows);
}

/** runLabel names a run by its levels, e.g. "a=1 b=x #2". */
function runLabel(r: Run, factors: { name: string }[]): string {
  return factors.map((f) => `${f.name}=${r.levels[f.name] ?? "?"}`).join(" ") + ` #${r.rep}`;
}

/** renderReport fills root with the experiment page. */
export function renderReport(root: HTMLElement, x: Experiment, file: string): void {
  const a = x.analysis;
  root.replaceChildren();
  const factors = a.factors;
  root.appendChild(el("h2", {}, `Experiment ${a.name}`));
  let sum = `Factors: ${factors.map((f) => `${f.name} (${f.levels.join(", ")})`).join("; ")}. ${a.measured} measured runs, ${a.warmups} warm-up runs left out`;
  if (a.missing > 0) sum += `, ${a.missing} planned runs not done yet`;
  if (a.failed > 0) sum += `, ${a.failed} failed`;
  root.appendChild(el("p", { class: "summary" }, sum + `. From ${file.split("/").pop()}.`));

  for (const [i, r] of a.responses.entries()) {
    const sec = el("section", { class: "response", "data-response": r.response });
    const unit = responseUnit(r.response);
    sec.appendChild(el("h3", {}, unit ? `${r.response} (${unit})` : r.response));
    root.appendChild(sec);
    const res = r.anova;
    if (!res) {
      sec.appendChild(el("p", { class: "no-analysis" }, `No analysis: ${r.error}.`));
      continue;
    }
    const scale = res.log ? ` (ln scale${unit ? `, ${unit}` : ""})` : unit ? ` (${unit})` : "";
    sec.appendChild(
      el("p", {}, `${factors.map((f) => `${f.name} (${f.levels.length})`).join(" × ")} full factorial, ${res.replications} replication(s), ${res.n} observations; mean${scale} ${num(res.mean)}, ${Math.round(res.confidence * 100)}% CI [${num(res.mean_ci.low)}, ${num(res.mean_ci.high)}].`),
    );
    sec.appendChild(anovaTable(res));
    const ul = el("ul", { class: "verdicts" });
    for (const v of res.verdicts) ul.appendChild(el("li", {}, v));
    sec.appendChild(ul);
    const charts = el("div", { class: "charts" });
    const fig = (title: string, c: SVGElement) => {
      const f = el("figure");
      f.appendChild(c);
      f.appendChild(el("figcaption", {}, title));
      charts.appendChild(f);
    };
    fig(`Effects${scale} with ${Math.round(res.confidence * 100)}% confidence intervals (filled: the interval excludes 0)`, effectsChart(res));
    const qq = res.qq;
    if (qq.length) {
      fig(
        `Normal QQ plot of the residuals (correlation ${num(res.diagnostics.qq_correlation)})`,
        scatter(String(i), "qq", qq.map((p) => ({ x: p.normal, y: p.residual, title: `normal ${num(p.normal)}, residual ${num(p.residual)}` })), "normal quantile", `residual${scale}`, qqLine(qq)),
      );
    }
    const rv = res.residuals;
    if (rv.length) {
      fig(
        "Residuals against predicted values",
        scatter(String(i), "residuals", rv.map((p) => ({ x: p.predicted, y: p.residual, title: `${p.levels.join(" ")}: predicted ${num(p.predicted)}, residual ${num(p.residual)}` })), `predicted${scale}`, `residual${scale}`, () => 0),
      );
    }
    sec.appendChild(charts);
    if (res.contrasts.length) {
      sec.appendChild(
        table(
          "contrasts",
          ["factor", "contrast", "difference", "low", "high", "significant"],
          res.contrasts.map((c) => [c.factor, `${c.a} − ${c.b}`, num(c.estimate), num(c.low), num(c.high), c.significant ? "yes" : "no"]),
        ),
      );
    }
  }

  for (const c of a.comparisons) {
    const sec = el("section", { class: "comparison" });
    sec.appendChild(el("h3", {}, `${c.other} vs ${c.base}`));
    sec.appendChild(el("p", {}, `Speedup of ${c.other} over ${c.base} (mean wall time ratio): ${c.speedup == null ? "–" : c.speedup.toFixed(3) + "×"}.`));
    sec.appendChild(
      table(
        "comparison",
        ["event", c.base, c.other, "change"],
        c.events.map((r) => [r.event, num(r.base), num(r.other), r.change_percent == null ? "n/a" : `${r.change_percent >= 0 ? "+" : ""}${percent(r.change_percent)}`]),
      ),
    );
    root.appendChild(sec);
  }

  // Per-node distributions: one boxplot per event with a box per measured run, then per regime.
  const dsec = el("section", { class: "distributions" });
  dsec.appendChild(el("h3", {}, "Per-node distributions"));
  dsec.appendChild(el("p", {}, "Each box spreads one event's per-node totals over the nodes: whiskers at the smallest and largest node, the box from the first to the third quartile, the line at the median, and a dot per node (red: the node with the largest value when it is an outlier)."));
  // Measured runs grouped by cell (levels in the spec's order), then by replication.
  const rank = (r: Run) => factors.map((f) => f.levels.indexOf(r.levels[f.name] ?? ""));
  const runs = x.runs
    .filter((r) => !r.warmup)
    .sort((p, q) => {
      const a = rank(p),
        b = rank(q);
      for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
      return p.rep - q.rep;
    });
  const events = new Set<string>();
  for (const r of runs) for (const [ev, e] of Object.entries(r.events)) if (e.distribution) events.add(ev);
  let drawn = 0;
  for (const ev of [...events].sort()) {
    const boxes: Box[] = runs.flatMap((r) => {
      const e = r.events[ev];
      return e?.distribution ? [{ label: runLabel(r, factors), dist: e.distribution, perNode: e.per_node, run: r.run }] : [];
    });
    if (boxes.every((b) => b.dist.max === 0 && b.dist.min === 0)) continue; // nothing happened on any node
    const f = el("figure", { class: "dist", "data-event": ev });
    f.appendChild(boxplot(ev, boxes));
    f.appendChild(el("figcaption", {}, `${ev}: per run`));
    dsec.appendChild(f);
    drawn++;
  }
  const byEvent = new Map<string, Box[]>();
  for (const d of a.distributions) {
    if (!d.distribution) continue;
    byEvent.set(d.event, [...(byEvent.get(d.event) ?? []), { label: d.regime, dist: d.distribution, perNode: d.per_node }]);
  }
  for (const [ev, boxes] of byEvent) {
    const f = el("figure", { class: "dist regime", "data-event": ev });
    f.appendChild(boxplot(ev, boxes));
    f.appendChild(el("figcaption", {}, `${ev}: mean per-node totals per regime`));
    dsec.appendChild(f);
    drawn++;
  }
  if (!drawn) dsec.appendChild(el("p", { class: "none" }, "No event was spread over two or more nodes in these runs (a one-node machine, or no per-node events recorded)."));
  root.appendChild(dsec);
}
