// The profile pages: a profile written by `numascope profile` (served by
// `numascope view PROFILE.json`, or loaded from disk) as a summary with the
// hints, the access matrix as a heatmap, the threads with their pinning
// logs, functions and lines sortable by any metric, the source annotated
// line by line, and the memory kinds (and allocation sites when the
// profile has them). The format is docs/profile.md; everything here reads
// it as it is, so the numbers on the page are the file's.
//
// Plain DOM tables: every view here is a table or a grid of counts, and
// tables stay searchable, selectable and copyable.

import { el } from "./dom";

/** The seven metrics of docs/profile.md, in its order. */
export const METRICS = [
  ["first_touch", "first touch", "FT", "base pages placed by first-touch faults (512 per huge page)"],
  ["unpinned_first_touch", "unpinned first touch", "uFT", "pages placed by a thread that was unpinned at the time"],
  ["local", "local", "loc", "sampled accesses from a CPU on the page's node"],
  ["remote", "remote", "rem", "sampled accesses from a CPU on another node"],
  ["unpinned_page", "unpinned page", "uPg", "sampled accesses by a pinned thread to a page first touched by an unpinned thread"],
  ["unpinned_thread", "unpinned thread", "uTh", "sampled accesses by an unpinned thread to a page first touched by a pinned thread"],
  ["unpinned_both", "unpinned both", "uBo", "sampled accesses by an unpinned thread to a page first touched by an unpinned thread"],
] as const;

type Metric = (typeof METRICS)[number][0];
type Metrics = Record<Metric, number>;
/** What tables sort by: a metric, or one derived from them. */
type Key = Metric | "accesses" | "remote_pct" | "weight";

const DERIVED: [Key, string, string, string][] = [
  ["accesses", "accesses", "acc", "sampled accesses: local + remote"],
  ["remote_pct", "remote %", "rem%", "remote share of the sampled accesses"],
];

function value(m: any, k: Key): number {
  const g = (x: Metric) => Number(m?.[x] ?? 0);
  switch (k) {
    case "accesses":
      return g("local") + g("remote");
    case "remote_pct": {
      const a = g("local") + g("remote");
      return a ? (100 * g("remote")) / a : 0;
    }
    case "weight":
      return g("first_touch") + g("local") + g("remote");
    default:
      return g(k);
  }
}

function zero(): Metrics {
  return { first_touch: 0, unpinned_first_touch: 0, local: 0, remote: 0, unpinned_page: 0, unpinned_thread: 0, unpinned_both: 0 };
}

function add(into: Metrics, m: any): void {
  for (const [k] of METRICS) into[k] += Number(m?.[k] ?? 0);
}

// ---------------------------------------------------------------- DOM helpers

// el (src/dom.ts) puts names into the page as text: they are the profile's.

/** maxOf is the largest of vs, at least 0 (Math.max(...vs) overflows the stack on big arrays). */
function maxOf(vs: Iterable<number>): number {
  let m = 0;
  for (const v of vs) if (v > m) m = v;
  return m;
}

/** int formats a count with thousands separators. */
export function int(v: number): string {
  return Math.round(v).toLocaleString("en-US");
}

/** bytes formats a size in binary units. */
function bytes(v: number): string {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (v >= 1024 && i < u.length - 1) {
    v /= 1024;
    i++;
  }
  return i ? `${v.toFixed(v >= 100 ? 0 : 1)} ${u[i]}` : `${v} B`;
}

function pct(a: number, b: number): string {
  if (!b) return "–";
  const p = (100 * a) / b;
  return (p > 0 && p < 1 ? p.toFixed(1) : p.toFixed(0)) + "%";
}

function base(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? path : path.slice(i + 1);
}

function nodeList(nodes: number[] | undefined): string {
  if (!nodes?.length) return "–";
  const s = [...nodes].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < s.length; ) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(j > i ? `${s[i]}-${s[j]}` : String(s[i]));
    i = j + 1;
  }
  return out.join(",");
}

function where(l: any): string {
  if (!l.file) return l.function || "?";
  return `${base(l.file)}${l.line ? ":" + l.line : ""}`;
}

// ---------------------------------------------------------------- sortable tables

interface Col<R> {
  key: string;
  label: string;
  title?: string;
  num?: boolean;
  /** sort value; also the cell's text when text is not given */
  get: (r: R) => number | string;
  text?: (r: R) => string;
  /** draws a bar behind numbers, relative to the column's largest */
  bar?: boolean;
}

interface TableOpts<R> {
  cls: string;
  sort: string;
  desc?: boolean;
  filter?: (r: R) => boolean;
  rowAttrs?: (r: R) => Record<string, string>;
  onRow?: (r: R, e: MouseEvent) => void;
  /** the content of a detail row shown under r when it is expanded */
  detail?: (r: R) => HTMLElement;
  rowKey?: (r: R) => string;
  empty?: string;
}

/** SortTable is a table sorted by a click on any header (again: the other way). */
class SortTable<R> {
  table: HTMLTableElement;
  sort: string;
  desc: boolean;
  expanded = new Set<string>();
  /** rows drawn at most, until "show all": a big program has tens of thousands of lines */
  limit = 1000;
  private tbody: HTMLTableSectionElement;
  constructor(
    private cols: Col<R>[],
    private rows: R[],
    private o: TableOpts<R>,
  ) {
    this.sort = o.sort;
    this.desc = o.desc ?? true;
    this.table = el("table", { class: "ptable " + o.cls });
    const tr = el("tr");
    for (const c of cols) {
      const th = el("th", { "data-key": c.key, class: c.num ? "num" : "" }, c.label);
      if (c.title) th.title = c.title;
      th.onclick = () => {
        if (this.sort === c.key) this.desc = !this.desc;
        else {
          this.sort = c.key;
          this.desc = !!c.num;
        }
        this.render();
      };
      tr.append(th);
    }
    this.tbody = el("tbody");
    this.table.append(el("thead", {}, tr), this.tbody);
    this.render();
  }

  setRows(rows: R[]): void {
    this.rows = rows;
    this.render();
  }

  sorted(): R[] {
    const rows = this.rows.filter((r) => !this.o.filter || this.o.filter(r));
    const c = this.cols.find((x) => x.key === this.sort);
    if (!c) return rows; // unsorted: the profile's order
    const sgn = this.desc ? -1 : 1;
    // Stable: equal rows keep the profile's order.
    return rows
      .map((r, i) => ({ r, i, v: c.get(r) }))
      .sort((a, b) => {
        const d = typeof a.v === "number" && typeof b.v === "number" ? a.v - b.v : String(a.v).localeCompare(String(b.v));
        return d ? sgn * d : a.i - b.i;
      })
      .map((x) => x.r);
  }

  render(): void {
    for (const th of this.table.tHead!.querySelectorAll("th")) {
      const on = th.dataset.key === this.sort;
      th.classList.toggle("sorted", on);
      th.dataset.dir = on ? (this.desc ? "desc" : "asc") : "";
    }
    const rows = this.sorted();
    const max = new Map<string, number>();
    for (const c of this.cols) if (c.bar) max.set(c.key, maxOf(rows.map((r) => Number(c.get(r)) || 0)));
    this.tbody.replaceChildren();
    if (!rows.length) {
      this.tbody.append(el("tr", { class: "none" }, el("td", { colspan: String(this.cols.length) }, this.o.empty ?? "nothing to show")));
      return;
    }
    for (const r of rows.slice(0, this.limit)) {
      const tr = el("tr", this.o.rowAttrs?.(r) ?? {});
      for (const c of this.cols) {
        const v = c.get(r);
        const td = el("td", { class: c.num ? "num" : "", "data-key": c.key }, c.text ? c.text(r) : typeof v === "number" ? int(v) : v);
        if (c.num && v === 0) td.classList.add("zero");
        const m = max.get(c.key);
        if (m && typeof v === "number" && v > 0) td.style.setProperty("--bar", `${Math.max(1, (100 * v) / m).toFixed(1)}%`);
        tr.append(td);
      }
      const key = this.o.rowKey?.(r);
      if (this.o.onRow || this.o.detail) {
        tr.classList.add("clickable");
        tr.onclick = (e) => {
          if (this.o.detail && key !== undefined) {
            if (this.expanded.has(key)) this.expanded.delete(key);
            else this.expanded.add(key);
            this.render();
          }
          this.o.onRow?.(r, e);
        };
      }
      this.tbody.append(tr);
      if (this.o.detail && key !== undefined && this.expanded.has(key)) {
        tr.classList.add("expanded");
        const td = el("td", { colspan: String(this.cols.length) }, this.o.detail(r));
        this.tbody.append(el("tr", { class: "detail" }, td));
      }
    }
    if (rows.length > this.limit) {
      const b = el("button", {}, `show all ${int(rows.length)}`);
      b.onclick = () => {
        this.limit = Infinity;
        this.render();
      };
      this.tbody.append(el("tr", { class: "more" }, el("td", { colspan: String(this.cols.length) }, `${int(rows.length - this.limit)} more rows (sort or filter to find them) `, b)));
    }
  }
}

function metricCols<R>(get: (r: R) => any, bar = true): Col<R>[] {
  return [
    ...METRICS.map(([k, label, , title]) => ({ key: k, label, title, num: true, bar, get: (r: R) => value(get(r), k) })),
    ...DERIVED.map(([k, label, , title]) => ({
      key: k,
      label,
      title,
      num: true,
      bar: bar && k !== "remote_pct",
      get: (r: R) => value(get(r), k),
      text: k === "remote_pct" ? (r: R) => (value(get(r), "accesses") ? value(get(r), k).toFixed(1) + "%" : "–") : undefined,
    })),
  ];
}

// ---------------------------------------------------------------- the pages

/** Where source files come from: the server (view), or nowhere (a file from disk). */
export interface SourceFetcher {
  /** asks for file; resolves with its lines, rejects with the server's message */
  (file: string): Promise<{ path: string; lines: string[] }>;
}

export interface ProfileOptions {
  file: string;
  /** numascope's hints (the server's; absent for a file from disk) */
  hints?: string[];
  sourcePath?: string[];
  fetch?: SourceFetcher;
}

/** SOURCE_WINDOW is how many lines of a source file are drawn at once. */
const SOURCE_WINDOW = 4000;

const PAGES = [
  ["summary", "Summary"],
  ["matrix", "Access matrix"],
  ["threads", "Threads"],
  ["code", "Functions & lines"],
  ["source", "Source"],
  ["memory", "Memory"],
] as const;
type Page = (typeof PAGES)[number][0];

interface LineRow {
  function: string;
  file: string;
  line: number;
  metrics: any;
  lines?: number; // per function: how many lines
  hot?: any; // per function: its hottest line
}

/** ProfileView holds one profile's pages. */
class ProfileView {
  root: HTMLElement;
  p: any;
  o: ProfileOptions;
  pages = new Map<Page, HTMLElement>();
  tabs = new Map<Page, HTMLButtonElement>();
  sources = new Map<string, Promise<{ path: string; lines: string[] }>>();
  srcFile = "";
  srcLine = 0;
  /** the window of lines drawn [lo, hi) (indexes into the lines shown), null: around srcLine */
  srcWin: [number, number] | null = null;
  heatBy: Key = "weight";
  codeTable: SortTable<LineRow> | null = null;
  byFunction = true;
  filterText = "";

  constructor(root: HTMLElement, p: any, o: ProfileOptions) {
    this.root = root;
    this.p = p;
    this.o = o;
    root.replaceChildren();
    const nav = el("nav", { class: "ptabs", role: "tablist" });
    for (const [id, label] of PAGES) {
      const b = el("button", { "data-page": id, role: "tab" }, label);
      b.onclick = () => this.show(id);
      this.tabs.set(id, b);
      nav.append(b);
    }
    root.append(nav);
    for (const [id] of PAGES) {
      const sec = el("section", { class: "ppage", "data-page": id });
      this.pages.set(id, sec);
      root.append(sec);
    }
    this.summary();
    this.matrix();
    this.miniMatrix();
    this.threads();
    this.code();
    this.sourcePage();
    this.memory();
    this.show("summary");
  }

  show(id: Page): void {
    for (const [k, sec] of this.pages) sec.hidden = k !== id;
    for (const [k, b] of this.tabs) {
      b.classList.toggle("on", k === id);
      b.setAttribute("aria-selected", String(k === id));
    }
  }

  // ---------------------------------------------------------------- summary

  summary(): void {
    const p = this.p,
      page = this.pages.get("summary")!;
    // Facts, totals and hints on the left; the access matrix in small on the right (miniMatrix).
    const sec = el("div", { class: "sumleft" });
    page.append(el("div", { class: "sumgrid" }, sec, el("div", { class: "sumright" })));
    const t = p.totals ?? {};
    const acc = value(t, "accesses");
    const status = p.signal ? `killed by ${p.signal} (exit status ${p.exit_status})` : `exit status ${p.exit_status ?? "?"}`;
    sec.append(el("h2", { class: "command" }, (p.command ?? []).join(" ")));
    const facts: [string, string, string?][] = [
      ["status", status, p.exit_status ? "bad" : ""],
      ["duration", `${Number(p.duration_s ?? 0).toFixed(2)} s`],
      ["nodes", nodeList(p.nodes)],
      ["NUMA balancing", p.numa_balancing ? "on" : "off (first touches only)", p.numa_balancing ? "" : "warn"],
      ["page faults sampled", int(p.samples ?? 0)],
      ["lost", int(p.lost ?? 0) + (p.lost ? " (ring buffer full: counts are lower bounds)" : ""), p.lost ? "bad" : ""],
      ["huge pages", int(p.huge_pages ?? 0)],
      ["threads", int((p.threads ?? []).length)],
    ];
    const dl = el("dl", { class: "facts" });
    for (const [k, v, cls] of facts) dl.append(el("dt", {}, k), el("dd", { "data-fact": k, class: cls ?? "" }, v));
    sec.append(dl);
    if (p.notes?.length) sec.append(el("h3", {}, "Notes"), el("ul", { class: "notes" }, ...p.notes.map((n: string) => el("li", {}, n))));

    sec.append(el("h3", {}, "Totals"));
    const share: Record<string, [number, string]> = {
      unpinned_first_touch: [t.first_touch, "of first touches"],
      local: [acc, "of sampled accesses"],
      remote: [acc, "of sampled accesses"],
      unpinned_page: [acc, "of sampled accesses"],
      unpinned_thread: [acc, "of sampled accesses"],
      unpinned_both: [acc, "of sampled accesses"],
    };
    const tb = el("tbody");
    for (const [k, label, , title] of METRICS) {
      const v = Number(t[k] ?? 0);
      const s = share[k];
      tb.append(
        el(
          "tr",
          { "data-metric": k, title },
          el("td", {}, label),
          el("td", { class: "num", "data-value": String(v) }, int(v)),
          el("td", { class: "num share" }, s ? `${pct(v, s[0])} ${s[1]}` : ""),
        ),
      );
    }
    tb.append(el("tr", { "data-metric": "accesses", class: "sum" }, el("td", {}, "sampled accesses (local + remote)"), el("td", { class: "num", "data-value": String(acc) }, int(acc)), el("td")));
    sec.append(el("table", { class: "ptable totals" }, el("thead", {}, el("tr", {}, el("th", {}, "metric"), el("th", { class: "num" }, "count"), el("th", { class: "num" }, "share"))), tb));

    sec.append(el("h3", {}, "Hints"));
    if (this.o.hints) {
      sec.append(
        this.o.hints.length
          ? el("ul", { class: "hints" }, ...this.o.hints.map((h) => el("li", {}, h)))
          : el("p", { class: "muted hints-none" }, "No hints: nothing in this profile stands out (remote accesses under 10%, threads pinned, nothing lost)."),
      );
    } else {
      sec.append(el("p", { class: "muted hints-none" }, "Hints come from numascope: open this profile with numascope view FILE (or run numascope report FILE)."));
    }

    // The top lines, as numascope report lists them; a click opens the source.
    const tops = el("div", { class: "tops" });
    for (const [k, label] of [
      ["remote", "Top lines by remote accesses"],
      ["first_touch", "Top lines by first touch"],
    ] as [Metric, string][]) {
      const locs = (p.locations ?? []).filter((l: any) => value(l.metrics, k) > 0);
      locs.sort((a: any, b: any) => value(b.metrics, k) - value(a.metrics, k));
      if (!locs.length) continue;
      const total = Number(t[k] ?? 0);
      const ol = el("ol", { class: "top", "data-metric": k });
      for (const l of locs.slice(0, 5)) {
        const a = el("a", { href: "#", title: l.file ? `${l.file}:${l.line}` : "no line information" }, l.file ? `${where(l)} (${l.function})` : l.function);
        a.onclick = (e) => {
          e.preventDefault();
          this.openSource(l.file, l.line);
        };
        ol.append(el("li", {}, el("span", { class: "num" }, `${int(value(l.metrics, k))} · ${pct(value(l.metrics, k), total)}`), " ", a));
      }
      tops.append(el("div", {}, el("h3", {}, label), ol));
    }
    sec.append(tops);
  }

  // ---------------------------------------------------------------- access matrix

  matrix(): void {
    const sec = this.pages.get("matrix")!;
    const m = this.p.access_matrix ?? {};
    const rows: number[] = m.thread_nodes ?? [],
      cols: number[] = m.page_nodes ?? [],
      counts: number[][] = m.counts ?? [];
    sec.append(
      el(
        "p",
        { class: "muted" },
        "Sampled accesses by the accessing thread's node (rows; unpinned threads on their own row) and the node of the page at the time (columns). The diagonal (outlined) is local; everything else is remote. Each cell: the count and its share of the row.",
      ),
    );
    const cpuNodes = new Set(rows.filter((n) => n >= 0));
    const all = counts.flat().reduce((a, b) => a + b, 0);
    const max = maxOf(counts.flat());
    const tbl = el("table", { class: "matrix" });
    const head = el("tr", {}, el("th", { class: "corner" }, "thread ↓ \\ page →"));
    for (const c of cols) {
      const th = el("th", { "data-col": String(c) }, `node ${c}`);
      if (rows.length && !cpuNodes.has(c)) {
        th.classList.add("cpuless");
        th.append(el("small", {}, " (no CPUs)"));
        th.title = `node ${c} has no CPUs (CXL or HBM memory): every access to it is remote`;
      }
      head.append(th);
    }
    head.append(el("th", { class: "rowsum" }, "row total"), el("th", { class: "rowsum" }, "remote"));
    tbl.append(el("thead", {}, head));
    const tb = el("tbody");
    const colSum = cols.map(() => 0);
    rows.forEach((r, i) => {
      const row = counts[i] ?? [];
      const rs = row.reduce((a, b) => a + b, 0);
      const name = r === -1 ? "unpinned" : `node ${r}`;
      const tr = el("tr", { "data-row": String(r) }, el("th", {}, name));
      if (!rs) tr.classList.add("empty");
      let remote = 0;
      cols.forEach((c, j) => {
        const v = row[j] ?? 0;
        colSum[j] += v;
        const diag = r === c;
        if (!diag && r !== -1) remote += v;
        const x = max ? v / max : 0;
        // sqrt: a cell with a quarter of the largest count is still half as dark.
        const s = Math.sqrt(x);
        const td = el("td", { "data-row": String(r), "data-col": String(c), "data-count": String(v), class: "cell" + (diag ? " diag" : "") + (v ? "" : " zero") });
        td.style.background = v ? `hsl(${diag ? 145 : r === -1 ? 35 : 0} 70% ${Math.round(96 - 50 * s)}%)` : "";
        if (s > 0.6) td.classList.add("dark");
        td.append(el("span", { class: "count" }, int(v)), el("span", { class: "rowpct" }, rs ? pct(v, rs) : ""));
        const kind = r === -1 ? "by unpinned threads (locality left to the scheduler)" : diag ? "local" : "remote";
        td.title = `${r === -1 ? "unpinned threads" : `threads on node ${r}`} → pages on node ${c}: ${int(v)} sampled accesses, ${kind}\n${pct(v, rs)} of the row, ${pct(v, all)} of all sampled accesses`;
        tr.append(td);
      });
      tr.append(el("td", { class: "rowsum num" }, int(rs)), el("td", { class: "rowsum num", title: r === -1 ? "unpinned threads: local or remote depends on where each ran" : "" }, r === -1 ? "–" : `${int(remote)} (${pct(remote, rs)})`));
      tb.append(tr);
    });
    const foot = el("tr", { class: "colsum" }, el("th", {}, "column total"));
    cols.forEach((_c, j) => foot.append(el("td", { class: "num" }, int(colSum[j]))));
    foot.append(el("td", { class: "num" }, int(all)), el("td"));
    tb.append(foot);
    tbl.append(tb);
    sec.append(tbl);
    if (!all) sec.append(el("p", { class: "muted none" }, "No sampled accesses in this profile: " + ((this.p.notes ?? []).join("; ") || "only first touches are known (one node, or NUMA balancing off).")));
    sec.append(
      el(
        "p",
        { class: "legend" },
        el("span", { class: "sw", style: "background:hsl(145 70% 60%)" }),
        " local (diagonal) ",
        el("span", { class: "sw", style: "background:hsl(0 70% 60%)" }),
        " remote ",
        el("span", { class: "sw", style: "background:hsl(35 70% 60%)" }),
        " unpinned threads; darker: more accesses (square root of the count against the largest cell, ",
        int(max),
        ").",
      ),
    );
  }

  /** miniMatrix puts a small copy of the heatmap on the summary; a click opens the full one. */
  miniMatrix(): void {
    const t = this.pages.get("matrix")!.querySelector("table.matrix");
    const right = this.pages.get("summary")!.querySelector(".sumright") as HTMLElement;
    if (!t) return;
    const mini = t.cloneNode(true) as HTMLElement;
    mini.classList.add("mini");
    mini.title = "open the access matrix";
    mini.onclick = () => this.show("matrix");
    right.append(el("h3", {}, "Access matrix"), mini, el("p", { class: "muted" }, "rows: the accessing thread's node; columns: the page's node; outlined: local"));
  }

  // ---------------------------------------------------------------- threads

  threads(): void {
    const sec = this.pages.get("threads")!;
    const threads: any[] = this.p.threads ?? [];
    const nodes = (this.p.nodes ?? []).length;
    sec.append(el("p", { class: "muted" }, "Every thread of the program and its children. A thread is pinned when its last CPU affinity spans exactly one node. Click a row for its pinning log: every affinity numascope saw, when."));
    const pinned = (th: any) => (th.nodes ?? []).length === 1;
    const cols: Col<any>[] = [
      { key: "tid", label: "tid", num: true, get: (r) => r.tid, text: (r) => String(r.tid) },
      { key: "pid", label: "pid", num: true, get: (r) => r.pid, text: (r) => String(r.pid) },
      { key: "comm", label: "comm", get: (r) => r.comm ?? "" },
      {
        key: "nodes",
        label: "nodes",
        title: "node set of the last affinity",
        get: (r) => (pinned(r) ? 0 : 1) * 1000 + (r.nodes?.[0] ?? 0),
        text: (r) => (pinned(r) ? `pinned: node ${r.nodes[0]}` : `unpinned: ${nodeList(r.nodes)}${nodes && (r.nodes ?? []).length === nodes ? " (all)" : ""}`),
      },
      { key: "changes", label: "affinities", num: true, title: "entries in the pinning log", get: (r) => (r.binding_log ?? []).length, text: (r) => String((r.binding_log ?? []).length) },
      ...metricCols<any>((r) => r.metrics),
    ];
    const t = new SortTable<any>(cols, threads, {
      cls: "threads",
      sort: "tid",
      desc: false,
      rowKey: (r) => String(r.tid),
      rowAttrs: (r) => ({ "data-tid": String(r.tid), class: pinned(r) ? "pinned" : "unpinned" }),
      detail: (r) => this.bindingLog(r),
      empty: "no threads in this profile",
    });
    sec.append(t.table);
  }

  bindingLog(th: any): HTMLElement {
    const log: any[] = th.binding_log ?? [];
    const box = el("div", { class: "binding" });
    if (!log.length) {
      box.append(el("p", { class: "muted" }, "no affinity recorded"));
      return box;
    }
    const via = log.some((b) => b.via !== undefined);
    const head = el("tr", {}, el("th", { class: "num" }, "time (s)"), el("th", {}, "CPUs"), el("th", {}, "nodes"), el("th", {}, ""));
    if (via) head.append(el("th", {}, "via"));
    const tb = el("tbody");
    log.forEach((b, i) => {
      const one = (b.nodes ?? []).length === 1;
      const tr = el("tr", { "data-i": String(i) }, el("td", { class: "num" }, Number(b.time_s ?? 0).toFixed(3)), el("td", {}, b.cpus ?? ""), el("td", {}, nodeList(b.nodes)), el("td", { class: "muted" }, one ? "pinned" : "unpinned"));
      if (via) tr.append(el("td", {}, b.via ?? ""));
      tb.append(tr);
    });
    box.append(el("table", { class: "ptable binding-log" }, el("thead", {}, head), tb));
    return box;
  }

  // ---------------------------------------------------------------- functions and lines

  code(): void {
    const sec = this.pages.get("code")!;
    const bar = el("div", { class: "pbar" });
    const fn = el("input", { type: "radio", name: "pgroup", id: "pgroup-function", checked: "" });
    const ln = el("input", { type: "radio", name: "pgroup", id: "pgroup-line" });
    const filter = el("input", { type: "search", id: "pfilter", placeholder: "filter functions and files", size: "28" });
    bar.append(el("label", {}, fn, " by function"), el("label", {}, ln, " by line"), filter, el("span", { class: "muted" }, "click a header to sort, a row to open its source"));
    sec.append(bar);
    const rows = () => (this.byFunction ? this.functions() : (this.p.locations ?? []).map((l: any) => ({ ...l })));
    const cols: Col<LineRow>[] = [
      { key: "function", label: "function", get: (r) => r.function ?? "" },
      {
        key: "where",
        label: "file:line",
        get: (r) => `${r.file} ${String(r.line).padStart(8, "0")}`,
        text: (r) => (r.file ? `${base(r.file)}${r.line ? ":" + r.line : ""}${r.lines && r.lines > 1 ? ` (${r.lines} lines)` : ""}` : "(no line information)"),
      },
      ...metricCols<LineRow>((r) => r.metrics),
    ];
    const t = new SortTable<LineRow>(cols, rows(), {
      cls: "code",
      // The profile's own order: first touch + sampled accesses, most first.
      sort: "",
      filter: (r) => {
        const q = this.filterText;
        return !q || (r.function ?? "").toLowerCase().includes(q) || (r.file ?? "").toLowerCase().includes(q);
      },
      rowAttrs: (r) => ({ "data-function": r.function ?? "", "data-file": r.file ?? "", "data-line": String(r.line ?? 0), title: r.file ? `${r.file}:${r.line}` : "no line information: build with -g" }),
      onRow: (r) => {
        const at = r.hot ?? r;
        this.heatBy = (METRICS.some(([k]) => k === t.sort) || t.sort === "accesses" ? t.sort : "weight") as Key;
        this.openSource(at.file, at.line);
      },
      empty: "no locations match",
    });
    this.codeTable = t;
    fn.onchange = ln.onchange = () => {
      this.byFunction = fn.checked;
      t.setRows(rows());
    };
    filter.oninput = () => {
      this.filterText = filter.value.trim().toLowerCase();
      t.render();
    };
    sec.append(t.table);
  }

  /** functions aggregates the locations by function (and file). */
  functions(): LineRow[] {
    const by = new Map<string, LineRow & { metrics: Metrics }>();
    for (const l of this.p.locations ?? []) {
      const k = `${l.function}\u0000${l.file}`;
      let f = by.get(k);
      if (!f) {
        f = { function: l.function, file: l.file, line: l.line, metrics: zero(), lines: 0, hot: l };
        by.set(k, f);
      }
      add(f.metrics, l.metrics);
      f.lines = (f.lines ?? 0) + 1;
      if (value(l.metrics, "weight") > value(f.hot.metrics, "weight")) f.hot = l;
      if (l.line && (!f.line || l.line < f.line)) f.line = l.line;
    }
    return [...by.values()];
  }

  // ---------------------------------------------------------------- source

  sourcePage(): void {
    const sec = this.pages.get("source")!;
    const files = new Map<string, Metrics>();
    for (const l of this.p.locations ?? []) {
      if (!l.file) continue;
      const m = files.get(l.file) ?? zero();
      add(m, l.metrics);
      files.set(l.file, m);
    }
    // Files only allocation sites name: listed, with no counts of their own.
    for (const a of this.p.allocations ?? []) if (a.file && !files.has(a.file)) files.set(a.file, zero());
    const bar = el("div", { class: "pbar" });
    const pick = el("select", { id: "psource-file" });
    pick.append(el("option", { value: "" }, "choose a source file…"));
    for (const [f, m] of [...files].sort((a, b) => value(b[1], "weight") - value(a[1], "weight"))) {
      pick.append(el("option", { value: f }, `${f} (${int(value(m, "first_touch"))} first touches, ${int(value(m, "accesses"))} accesses)`));
    }
    pick.onchange = () => pick.value && this.openSource(pick.value, 0);
    const heat = el("select", { id: "psource-heat", title: "what colours the lines" });
    for (const [k, label] of [["weight", "first touch + accesses"], ...METRICS.map(([k, l]) => [k, l]), ["accesses", "accesses"]] as [Key, string][]) heat.append(el("option", { value: k }, `heat: ${label}`));
    heat.onchange = () => {
      this.heatBy = heat.value as Key;
      void this.renderSource();
    };
    bar.append(pick, heat);
    if (this.o.fetch) {
      const sp = this.o.sourcePath ?? [];
      bar.append(el("span", { class: "muted sourcepath", title: "where numascope view looks for source files: the path the profile records, then its suffixes under each --source-path directory" }, sp.length ? `source path: ${sp.join(":")}` : "no --source-path: files are read where the profile says"));
    }
    sec.append(bar, el("div", { class: "psource" }, el("p", { class: "muted" }, "Click a line in Functions & lines (or pick a file above) to see its source with the metrics of every line.")));
    if (!files.size) sec.querySelector(".psource")!.replaceChildren(el("p", { class: "muted" }, "This profile has no line information (build the program with -g)."));
  }

  openSource(file: string, line: number): void {
    this.srcFile = file;
    this.srcLine = line;
    this.srcWin = null;
    this.show("source");
    void this.renderSource();
  }

  async renderSource(): Promise<void> {
    const sec = this.pages.get("source")!;
    (sec.querySelector("#psource-file") as HTMLSelectElement).value = this.srcFile;
    (sec.querySelector("#psource-heat") as HTMLSelectElement).value = this.heatBy;
    const box = sec.querySelector(".psource") as HTMLElement;
    const file = this.srcFile,
      line = this.srcLine;
    box.replaceChildren();
    if (!file) {
      box.append(el("p", { class: "muted source-missing" }, "This location has no line information: the code was built without -g (or the address is in no known file). Rebuild with -g to see lines."));
      return;
    }
    // Per-line metrics of this file (several functions can share a line: summed).
    const per = new Map<number, Metrics>();
    const fns = new Map<number, Set<string>>();
    for (const l of this.p.locations ?? []) {
      if (l.file !== file) continue;
      const m = per.get(l.line) ?? zero();
      add(m, l.metrics);
      per.set(l.line, m);
      fns.set(l.line, (fns.get(l.line) ?? new Set()).add(l.function));
    }
    const allocs = (this.p.allocations ?? []).filter((a: any) => a.file === file);
    const allocAt = new Map<number, any[]>();
    for (const a of allocs) allocAt.set(a.line, [...(allocAt.get(a.line) ?? []), a]);

    const head = el("div", { class: "srchead" }, el("h3", {}, file));
    box.append(head);
    const body = el("div", { class: "srcbody" });
    const side = el("aside", { class: "hotlines" });
    const code = el("div", { class: "srccode" });
    body.append(side, code);
    box.append(body);

    // Hot lines: this file's lines with counts, by the heat metric.
    const hot = [...per].filter(([, m]) => value(m, this.heatBy) > 0 || value(m, "weight") > 0);
    hot.sort((a, b) => value(b[1], this.heatBy) - value(a[1], this.heatBy) || value(b[1], "weight") - value(a[1], "weight") || a[0] - b[0]);
    side.append(el("h4", {}, `Hot lines (${hot.length})`));
    const ol = el("ol", { class: "hot" });
    for (const [n, m] of hot) {
      const a = el("a", { href: "#", "data-line": String(n) }, `${n}`);
      a.onclick = (e) => {
        e.preventDefault();
        this.srcLine = n;
        if (!this.jump(code, n)) {
          // Outside the lines drawn: draw the window around it.
          this.srcWin = null;
          void this.renderSource();
        }
      };
      ol.append(el("li", {}, a, el("span", { class: "fn" }, ` ${[...(fns.get(n) ?? [])].join(", ")}`), el("span", { class: "num" }, ` ${int(value(m, this.heatBy === "weight" ? "weight" : this.heatBy))}`)));
    }
    side.append(ol);

    let src: { path: string; lines: string[] } | null = null;
    let why = "";
    if (!this.o.fetch) {
      why = "Source is not available for a profile opened from disk: open it with numascope view FILE --source-path DIR to see the code.";
    } else {
      code.append(el("p", { class: "muted" }, `reading ${file}…`));
      let pr = this.sources.get(file);
      if (!pr) {
        pr = this.o.fetch(file);
        this.sources.set(file, pr);
      }
      try {
        src = await pr;
      } catch (e: any) {
        why = String(e?.message ?? e);
        this.sources.delete(file); // a restarted server may find it
      }
      if (this.srcFile !== file) return; // another file was opened meanwhile
    }
    code.replaceChildren();
    const lines = src?.lines ?? [];
    if (src) head.append(el("span", { class: "muted path" }, src.path === file ? "" : `read from ${src.path}`));
    else {
      code.append(el("p", { class: "source-missing" }, why));
    }
    const maxLine = maxOf(per.keys());
    if (src && maxLine > lines.length) {
      code.append(el("p", { class: "warn stale" }, `The profile names line ${maxLine} but ${src.path} has ${lines.length} lines: the source has changed since the profile was taken, or it is another file of that name.`));
    }
    // The table: line number, metrics, code. Without the source, only the lines with counts.
    const shown = src ? lines.map((_, i) => i + 1) : [...per.keys()].filter((n) => n > 0).sort((a, b) => a - b);
    const heatMax = maxOf([...per.values()].map((m) => value(m, this.heatBy)));
    const tbl = el("table", { class: "src" });
    const hr = el("tr", {}, el("th", { class: "ln" }, "line"));
    for (const [k, , short, title] of METRICS) hr.append(el("th", { class: "num", title: `${k}: ${title}` }, short));
    hr.append(el("th", { class: "code" }, src ? "" : "(source not available)"));
    tbl.append(el("thead", {}, hr));
    // Big files are drawn SOURCE_WINDOW lines at a time around the line asked
    // for (laying out 100,000 table rows takes seconds), with buttons for more.
    let [lo, hi] = this.srcWin ?? [0, shown.length];
    if (!this.srcWin && shown.length > SOURCE_WINDOW) {
      const at = Math.max(0, shown.indexOf(line));
      lo = Math.max(0, Math.min(at - SOURCE_WINDOW / 2, shown.length - SOURCE_WINDOW));
      hi = lo + SOURCE_WINDOW;
    }
    this.srcWin = [lo, hi];
    const more = (dir: "up" | "down", n: number) => {
      const b = el("button", { "data-dir": dir }, dir === "up" ? `show ${int(n)} lines above` : `show ${int(n)} lines below`);
      b.onclick = () => {
        this.srcWin = dir === "up" ? [Math.max(0, lo - SOURCE_WINDOW), hi] : [lo, Math.min(shown.length, hi + SOURCE_WINDOW)];
        this.srcLine = 0;
        void this.renderSource();
      };
      return el("p", { class: "more" }, b);
    };
    if (lo > 0) code.append(more("up", Math.min(lo, SOURCE_WINDOW)));
    // Plain DOM, the code and every name as text: the file and the profile are the program's.
    // Drawing SOURCE_WINDOW lines at a time keeps this quick. Lines without counts get one
    // empty cell for the metrics.
    const tb = el("tbody");
    for (const n of shown.slice(lo, hi)) {
      const m = per.get(n);
      const cell = el("td", { class: "code" }, src ? (lines[n - 1] ?? "") : "");
      for (const a of allocAt.get(n) ?? []) {
        cell.append(el("span", { class: "alloc", title: `allocation site: ${a.kind ?? ""} ${int(a.calls ?? 0)} calls, ${int(a.bytes ?? 0)} bytes` }, ` ◂ ${a.kind ?? "alloc"} ${int(a.calls ?? 0)}×`));
      }
      const tr = el("tr", { "data-line": String(n) }, el("td", { class: "ln" }, String(n)));
      if (!m) {
        tr.append(el("td", { class: "num zero", colspan: String(METRICS.length) }), cell);
        tb.append(tr);
        continue;
      }
      const h = heatMax ? value(m, this.heatBy) / heatMax : 0;
      tr.className = "hasdata";
      if (h > 0) tr.style.setProperty("--heat", `${Math.round(8 + 40 * Math.sqrt(h))}%`);
      tr.title = `${[...(fns.get(n) ?? [])].join(", ")}: ` + METRICS.filter(([k]) => value(m, k)).map(([k, label]) => `${label} ${int(value(m, k))}`).join(", ");
      for (const [k] of METRICS) {
        const v = value(m, k);
        tr.append(el("td", { class: v ? "num" : "num zero", "data-metric": k }, v ? int(v) : ""));
      }
      tr.append(cell);
      tb.append(tr);
    }
    tbl.append(tb);
    code.append(tbl);
    if (hi < shown.length) code.append(more("down", Math.min(shown.length - hi, SOURCE_WINDOW)));
    if (line) this.jump(code, line);
  }

  /** jump outlines line n and scrolls to it; false when it is not drawn. */
  jump(code: HTMLElement, n: number): boolean {
    for (const x of code.querySelectorAll("tr.target")) x.classList.remove("target");
    const tr = code.querySelector(`tr[data-line="${CSS.escape(String(n))}"]`) as HTMLElement | null;
    if (!tr) return false;
    tr.classList.add("target");
    // Scroll the code box only, not the page (the table is wider than the screen).
    const box = code.getBoundingClientRect(),
      at = tr.getBoundingClientRect();
    code.scrollTop += at.top - box.top - (box.height - at.height) / 2;
    return true;
  }

  // ---------------------------------------------------------------- memory

  memory(): void {
    const sec = this.pages.get("memory")!;
    sec.append(el("h3", {}, "Where the memory came from"));
    sec.append(el("p", { class: "muted" }, "Metrics per kind of memory: heap (brk), stack (every thread's: the main one's, and those mapped with MAP_STACK), anon (anonymous mmap: large mallocs, arenas), file, other, unknown (the process ended before the lookup)."));
    const maps: any[] = this.p.mappings ?? [];
    const mt = new SortTable<any>(
      [{ key: "kind", label: "kind", get: (r) => r.kind ?? "" }, { key: "file", label: "file", get: (r) => r.file ?? "" }, ...metricCols<any>((r) => r.metrics)],
      maps,
      { cls: "mappings", sort: "", rowAttrs: (r) => ({ "data-kind": r.kind ?? "" }), empty: "no mappings in this profile" },
    );
    sec.append(mt.table);
    const allocs = this.p.allocations;
    if (!Array.isArray(allocs)) return;
    sec.append(el("h3", {}, "Allocation sites"));
    sec.append(el("p", { class: "muted" }, "The code that allocated the memory (malloc, mmap…), with the metrics of the pages it returned. Click a row for its source."));
    const at = new SortTable<any>(
      [
        { key: "function", label: "function", get: (r) => r.function ?? "" },
        { key: "where", label: "file:line", get: (r) => `${r.file ?? ""} ${String(r.line ?? 0).padStart(8, "0")}`, text: (r) => (r.file ? `${base(r.file)}:${r.line}` : "(no line information)") },
        { key: "kind", label: "kind", get: (r) => r.kind ?? "" },
        { key: "calls", label: "calls", num: true, bar: true, get: (r) => Number(r.calls ?? 0) },
        { key: "bytes", label: "bytes", num: true, bar: true, get: (r) => Number(r.bytes ?? 0), text: (r) => bytes(Number(r.bytes ?? 0)) },
        ...metricCols<any>((r) => r.metrics),
      ],
      allocs,
      {
        cls: "allocations",
        sort: "",
        rowAttrs: (r) => ({ "data-function": r.function ?? "", "data-file": r.file ?? "", "data-line": String(r.line ?? 0) }),
        onRow: (r) => this.openSource(r.file ?? "", r.line ?? 0),
        empty: "no allocation sites in this profile",
      },
    );
    sec.append(at.table);
  }
}

let current: ProfileView | null = null;

/** asProfile recognises a profile: a JSON object with an access matrix. */
export function asProfile(v: any): any | null {
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  if (v.access_matrix && typeof v.access_matrix === "object" && Array.isArray(v.locations ?? [])) return v;
  return null;
}

/** renderProfile draws the profile pages of p into root. */
export function renderProfile(root: HTMLElement, p: any, o: ProfileOptions): void {
  current = new ProfileView(root, p, o);
  (window as any).__numascope_profile = current;
}

/** showProfilePage switches to one page of the shown profile (for links and tests). */
export function showProfilePage(page: Page): void {
  current?.show(page);
}

/** profileIn recognises a profile among files dropped or picked. */
export function profileIn(buf: ArrayBuffer): any | null {
  const head = new TextDecoder().decode(new Uint8Array(buf, 0, Math.min(buf.byteLength, 64))).trimStart();
  if (!head.startsWith("{") || /^\{\s*"type"\s*:/.test(head)) return null;
  try {
    return asProfile(JSON.parse(new TextDecoder().decode(buf)));
  } catch {
    return null;
  }
}

// Source requests in flight, by id: the reply is a "source" message or an
// "error" with the same id.
const waits = new Map<string, { resolve: (v: { path: string; lines: string[] }) => void; reject: (e: Error) => void }>();
let nextID = 0;

/** serverSource fetches source files from numascope view with "source" requests. */
export function serverSource(send: (msg: any) => boolean): SourceFetcher {
  return (file) =>
    new Promise((resolve, reject) => {
      const id = `source-${++nextID}`;
      waits.set(id, { resolve, reject });
      if (!send({ type: "source", id, file })) {
        waits.delete(id);
        reject(new Error("not connected to numascope: reload the page to reconnect"));
      }
    });
}

/** profileMessage takes the server's replies to source requests; false for any other message. */
export function profileMessage(m: any): boolean {
  const w = typeof m?.id === "string" ? waits.get(m.id) : undefined;
  if (!w) return false;
  waits.delete(m.id);
  if (m.type === "source") w.resolve({ path: m.path ?? m.file, lines: m.lines ?? [] });
  else w.reject(new Error(m.error ?? `unexpected reply ${m.type}`));
  return true;
}

/** profileDisconnected fails the source requests in flight. */
export function profileDisconnected(reason: string): void {
  for (const w of waits.values()) w.reject(new Error(`the connection to numascope closed${reason ? ": " + reason : ""}; reload the page to reconnect`));
  waits.clear();
}
