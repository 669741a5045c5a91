// The processes page of numascope live (issue 18, docs/top.md): the table
// of numascope top, the node view, page migrations by reason, where the
// numbers come from, and the drill-down of a clicked process. It polls the
// server's /api/processes while it is shown (docs/live-protocol.md, "The
// processes page"); the server refreshes one frame per interval for every
// browser and sorts, filters and cuts it per request, so a click on a
// header or a filter asks the server again. Commands, users, paths and
// hints are other users' data: all are text (src/dom.ts).

import { $, el } from "./dom";
import { bytes, ranges, share, si } from "./format";
import * as J from "./json";
import { mode } from "./page";
import { authHeaders } from "./token";

/** NUMA faults (or PMU DRAM accesses) per second, local and remote. */
export interface Faults {
  local: number;
  remote: number;
}

/** A row of the process table (top.Process). */
export interface Proc {
  pid: number;
  comm: string;
  user: string;
  threads: number;
  cpu_percent: number;
  rss_bytes: number;
  /** null: not read for this process (numa_maps is read for the top rows only) */
  memory_by_node: Record<string, number> | null;
  nodes_running: number[];
  preferred_node: number;
  /** null: no source gives them */
  numa_faults: Faults | null;
  /** where numa_faults is null, for the top rows: the remote share (0..1) of the balancer's recent, decayed faults; null otherwise */
  recent_remote_share: number | null;
  /** null: no source gives it */
  pages_migrated: number | null;
  pmu: Faults | null;
  /** a kernel thread (PF_KTHREAD): in the rows only when asked for (kthreads=1) */
  kernel_thread: boolean;
}

/** A row of the node view (top.Node). */
export interface PNode {
  node: number;
  cpus: number[];
  memory_total_bytes: number;
  memory_free_bytes: number;
  memory_used_bytes: number;
  cpu_percent: number;
  numa_faults: Faults | null;
  pages_migrated: number;
  pages_promoted: number;
  pages_demoted: number;
  numa_hit: number;
  numa_miss: number;
}

/** Where the numbers come from (top.Source). */
export interface Source {
  faults: string;
  migrations: string;
  memory: string;
  pmu: string;
  missing: string[];
  lost_records: number;
}

/** One refresh (top.Frame), its processes sorted, filtered and cut by the server. */
export interface Frame {
  time: string;
  interval_seconds: number;
  processes: Proc[];
  nodes: PNode[];
  migrations: Record<string, number> | null;
  source: Source;
}

/** The answer of GET /api/processes. */
export interface Answer {
  available: boolean;
  reason: string;
  error: string;
  /** the key the rows are really in: the one asked for unless no process has that figure */
  sort: string;
  /** why sort is not the key asked for; "" when it is */
  sort_note: string;
  order: string;
  /** whether kernel threads are in the rows, and how many were left out */
  kernel_threads: boolean;
  kernel_threads_hidden: number;
  total: number;
  matched: number;
  frame: Frame | null;
  refresh_in_ms: number;
}

/** A thread of the drill-down. */
export interface Thread {
  tid: number;
  comm: string;
  cpu_percent: number;
  cpu: number;
  node: number;
  preferred_node: number;
  numa_faults: Faults | null;
}

/** A numa_maps area of the drill-down. */
export interface Area {
  start: number;
  kind: string;
  path: string;
  policy: string;
  bytes_by_node: Record<string, number>;
}

/** A process's memory per node in numastat -p's categories (top.MemoryCategories). */
export interface MemoryCategories {
  huge: Record<string, number>;
  heap: Record<string, number>;
  stack: Record<string, number>;
  /** numastat's catch-all: every other mapping, file-backed ones included */
  private: Record<string, number>;
}

/** numastat -p's rows, in its order. */
export const CATEGORIES = ["huge", "heap", "stack", "private"] as const;

/** The answer of GET /api/processes/detail (top.Detail). */
export interface Detail {
  pid: number;
  comm: string;
  /** null where numa_maps could not be read (errors says why) */
  memory_bytes_by_node: Record<string, number> | null;
  memory_bytes_by_category: MemoryCategories | null;
  threads: Thread[];
  areas: Area[];
  hint: string;
  errors: string[];
}

const faults = (v: unknown): Faults | null => (J.isObj(v) ? { local: J.numOr(v.local, 0), remote: J.numOr(v.remote, 0) } : null);
const ints = (v: unknown) => J.numbers(v);
const nodeMap = (v: unknown): Record<string, number> | null => (J.isObj(v) ? J.record(v, J.num) : null);

function readProc(v: unknown): Proc | undefined {
  if (!J.isObj(v)) return undefined;
  return {
    pid: J.numOr(v.pid, 0),
    comm: J.strOr(v.comm, ""),
    user: J.strOr(v.user, ""),
    threads: J.numOr(v.threads, 0),
    cpu_percent: J.numOr(v.cpu_percent, 0),
    rss_bytes: J.numOr(v.rss_bytes, 0),
    memory_by_node: nodeMap(v.memory_bytes_by_node),
    nodes_running: ints(v.nodes_running),
    preferred_node: J.numOr(v.preferred_node, -1),
    numa_faults: faults(v.numa_faults),
    recent_remote_share: J.numOrNull(v.recent_remote_share),
    pages_migrated: J.numOrNull(v.pages_migrated),
    pmu: faults(v.pmu_dram_accesses),
    kernel_thread: J.bool(v.kernel_thread) ?? false,
  };
}

function readNode(v: unknown): PNode | undefined {
  if (!J.isObj(v)) return undefined;
  return {
    node: J.numOr(v.node, 0),
    cpus: ints(v.cpus),
    memory_total_bytes: J.numOr(v.memory_total_bytes, 0),
    memory_free_bytes: J.numOr(v.memory_free_bytes, 0),
    memory_used_bytes: J.numOr(v.memory_used_bytes, 0),
    cpu_percent: J.numOr(v.cpu_percent, 0),
    numa_faults: faults(v.numa_faults),
    pages_migrated: J.numOr(v.pages_migrated, 0),
    pages_promoted: J.numOr(v.pages_promoted, 0),
    pages_demoted: J.numOr(v.pages_demoted, 0),
    numa_hit: J.numOr(v.numa_hit, 0),
    numa_miss: J.numOr(v.numa_miss, 0),
  };
}

/** remoteShare is the remote % cell: of the fault rates (none in the first frame), else "~" and the share of the balancer's recent faults, else "–". */
function remoteShare(r: Proc, first: boolean): string {
  if (r.numa_faults) return first ? "–" : share(r.numa_faults.remote, r.numa_faults.local + r.numa_faults.remote);
  if (r.recent_remote_share !== null) return "~" + share(r.recent_remote_share, 1);
  return "–";
}

/** readAnswer reads the server's answer; nothing in it is trusted to have its type. */
export function readAnswer(v: unknown): Answer {
  const a = J.obj(v);
  let frame: Frame | null = null;
  if (J.isObj(a.frame)) {
    const f = a.frame;
    const s = J.obj(f.source);
    frame = {
      time: J.strOr(f.time, ""),
      interval_seconds: J.numOr(f.interval_seconds, 0),
      processes: J.list(f.processes, readProc),
      nodes: J.list(f.nodes, readNode),
      migrations: J.isObj(f.migrations_by_reason) ? J.record(f.migrations_by_reason, J.num) : null,
      source: {
        faults: J.strOr(s.faults, ""),
        migrations: J.strOr(s.migrations, ""),
        memory: J.strOr(s.memory, ""),
        pmu: J.strOr(s.pmu, ""),
        missing: J.strings(s.missing),
        lost_records: J.numOr(s.lost_records, 0),
      },
    };
  }
  return {
    available: J.bool(a.available) ?? false,
    reason: J.strOr(a.reason, ""),
    error: J.strOr(a.error, ""),
    sort: J.strOr(a.sort, ""),
    sort_note: J.strOr(a.sort_note, ""),
    order: J.strOr(a.order, ""),
    kernel_threads: J.bool(a.kernel_threads) ?? false,
    kernel_threads_hidden: J.numOr(a.kernel_threads_hidden, 0),
    total: J.numOr(a.total, 0),
    matched: J.numOr(a.matched, 0),
    frame,
    refresh_in_ms: J.numOr(a.refresh_in_ms, 1000),
  };
}

function categories(v: unknown): MemoryCategories | null {
  if (!J.isObj(v)) return null;
  const m = (k: string) => nodeMap(v[k]) ?? {};
  return { huge: m("huge"), heap: m("heap"), stack: m("stack"), private: m("private") };
}

/** readDetail reads a drill-down. */
export function readDetail(v: unknown): Detail {
  const d = J.obj(v);
  return {
    pid: J.numOr(d.pid, 0),
    comm: J.strOr(d.comm, ""),
    memory_bytes_by_node: nodeMap(d.memory_bytes_by_node),
    memory_bytes_by_category: categories(d.memory_bytes_by_category),
    threads: J.list(d.threads, (t) =>
      J.isObj(t)
        ? {
            tid: J.numOr(t.tid, 0),
            comm: J.strOr(t.comm, ""),
            cpu_percent: J.numOr(t.cpu_percent, 0),
            cpu: J.numOr(t.cpu, -1),
            node: J.numOr(t.node, -1),
            preferred_node: J.numOr(t.preferred_node, -1),
            numa_faults: faults(t.numa_faults),
          }
        : undefined,
    ),
    areas: J.list(d.areas, (a) =>
      J.isObj(a)
        ? { start: J.numOr(a.start, 0), kind: J.strOr(a.kind, ""), path: J.strOr(a.path, ""), policy: J.strOr(a.policy, ""), bytes_by_node: J.record(a.bytes_by_node, J.num) }
        : undefined,
    ),
    hint: J.strOr(d.hint, ""),
    errors: J.strings(d.errors),
  };
}

/** The sort keys of numascope top (top.SortKeys), and which way each sorts first. */
const SORT_FIRST: Record<string, "asc" | "desc"> = { remote: "desc", local: "desc", cpu: "desc", memory: "desc", migrated: "desc", pid: "asc" };

/** MAX_FILTER is the longest filter the server takes (live.MaxProcessFilter). */
const MAX_FILTER = 64;

/** The page's state: what is asked of the server, the last answer, the process drilled into. */
interface Page {
  root: HTMLElement;
  /** the key asked for; the answer says the one used (Answer.sort) */
  sort: string;
  order: "asc" | "desc";
  filter: string;
  /** show the kernel threads (hidden by default) */
  kthreads: boolean;
  last: Answer | null;
  pid: number | null;
  detail: Detail | null;
  detailError: string;
  timer: number | undefined;
  /** counts polls, so that an answer to an older one is dropped */
  seq: number;
}

let page: Page | null = null;

/** shown tells whether the processes page is on screen (and so polled). */
function shown(): boolean {
  return mode() === "live" && document.body.classList.contains("procs");
}

/** apiURL is path with q; the token goes in a header (getJSON), never in a URL or a cookie. */
function apiURL(path: string, q: Record<string, string>): string {
  return `${path}?${new URLSearchParams(q).toString()}`;
}

async function getJSON(url: string): Promise<unknown> {
  const r = await fetch(url, { credentials: "omit", cache: "no-store", headers: authHeaders() });
  const body: unknown = await r.json().catch(() => null);
  if (!r.ok) throw new Error(J.strOr(J.obj(body).error, `HTTP ${r.status}`));
  return body;
}

/** showPage switches between the samples and the processes page of live. */
export function showPage(which: "samples" | "processes"): void {
  const on = which === "processes";
  document.body.classList.toggle("procs", on);
  for (const [id, sel] of [
    ["tab-samples", !on],
    ["tab-processes", on],
  ] as const) {
    $(id).classList.toggle("on", sel);
    $(id).setAttribute("aria-selected", String(sel));
  }
  if (!on) {
    // Polling stops; the plots, shown again, resize through their ResizeObserver.
    if (page) window.clearTimeout(page.timer);
    return;
  }
  if (!page) page = build();
  void poll();
}

/** build makes the page's fixed parts once. */
function build(): Page {
  const root = el("section", { id: "processes", "aria-label": "processes" });
  document.body.insertBefore(root, $("drop"));
  const p: Page = { root, sort: "remote", order: "desc", filter: "", kthreads: false, last: null, pid: null, detail: null, detailError: "", timer: undefined, seq: 0 };
  const filter = el("input", { id: "proc-filter", type: "search", placeholder: "filter: command or PID", maxlength: String(MAX_FILTER), size: "24" });
  let debounce: number | undefined;
  filter.oninput = () => {
    window.clearTimeout(debounce);
    debounce = window.setTimeout(() => {
      p.filter = filter.value.trim().slice(0, MAX_FILTER);
      void poll();
    }, 200);
  };
  // Kernel threads are hidden by default: 50 of them at 0% came before the busy processes (issue 31).
  const kthreads = el("input", { id: "proc-kthreads", type: "checkbox" });
  kthreads.onchange = () => {
    p.kthreads = kthreads.checked;
    void poll();
  };
  root.append(
    el(
      "div",
      { class: "proc-bar" },
      filter,
      el("label", { title: "kernel threads (PF_KTHREAD) have no memory of their own to place" }, kthreads, " kernel threads"),
      el("span", { id: "proc-count", class: "muted" }),
    ),
    el("div", { id: "proc-sort-note", class: "muted", role: "status" }),
    el("div", { id: "proc-notice", role: "status", hidden: "" }),
    el("div", { id: "proc-error", class: "proc-error", role: "alert", hidden: "" }),
    el("div", { id: "proc-main" }, el("div", { id: "proc-table-box" }), el("aside", { id: "proc-detail", "aria-label": "process detail", hidden: "" })),
    el("div", { id: "proc-lower" }, el("section", { id: "proc-nodes" }), el("section", { id: "proc-migrations" }), el("section", { id: "proc-source" })),
  );
  window.addEventListener("resize", () => void fitDetail());
  return p;
}

/** poll asks for the next frame now and schedules the one after, while the page is shown. */
async function poll(): Promise<void> {
  const p = page;
  if (!p) return;
  window.clearTimeout(p.timer);
  if (!shown()) return;
  const seq = ++p.seq;
  let next = 1000;
  try {
    const a = readAnswer(await getJSON(apiURL("/api/processes", { sort: p.sort, order: p.order, filter: p.filter, kthreads: p.kthreads ? "1" : "0" })));
    if (seq !== p.seq) return;
    p.last = a;
    // The server says when its next frame is due: ask just after it.
    next = Math.min(5000, Math.max(200, a.refresh_in_ms + 50));
    draw(p, a);
    // A server without a feed has none for its whole life: ask no more.
    if (!a.available) return;
    if (p.pid !== null) await loadDetail(p, p.pid);
  } catch (e) {
    if (seq !== p.seq) return;
    notice("", `reading the processes failed: ${J.errorText(e)}`);
    next = 2000;
  }
  if (seq === p.seq && shown()) p.timer = window.setTimeout(() => void poll(), next);
}

/** notice sets the page's notice (why there is no table) and error lines; "" hides one. */
function notice(text: string, error: string): void {
  const n = $("proc-notice");
  n.textContent = text;
  n.hidden = !text;
  const e = $("proc-error");
  e.textContent = error;
  e.hidden = !error;
}

/** draw shows an answer. */
function draw(p: Page, a: Answer): void {
  const parts = [$("proc-table-box"), $("proc-nodes"), $("proc-migrations"), $("proc-source")];
  if (!a.available) {
    notice(`No process table here. ${a.reason}`, "");
    for (const x of parts) x.replaceChildren();
    $("proc-count").textContent = "";
    $("proc-sort-note").textContent = "";
    $("proc-detail").hidden = true;
    return;
  }
  notice("", a.error ? `the last refresh failed: ${a.error}` : "");
  const f = a.frame;
  if (!f) return;
  // p.sort stays the key asked for: where it falls back, the next frame that has its figure is in its order again.
  if (a.order === "asc" || a.order === "desc") p.order = a.order;
  const first = f.interval_seconds === 0;
  $("proc-count").textContent =
    `${a.matched === a.total ? `${a.total} processes` : `${a.matched} of ${a.total} processes match`}` +
    (f.processes.length < a.matched ? ` · first ${f.processes.length} shown` : "") +
    (a.kernel_threads_hidden ? ` · ${a.kernel_threads_hidden} kernel threads hidden` : "") +
    ` · ${f.time ? new Date(f.time).toLocaleTimeString() : "–"}` +
    (first ? " · first frame: rates start with the next" : ` · over ${f.interval_seconds.toFixed(1)} s`);
  // The order the rows are really in, and why where it is not the one asked for.
  const used = a.sort in SORT_FIRST ? a.sort : p.sort;
  $("proc-sort-note").textContent =
    `In ${used === "pid" ? "PID" : used} order, ${a.order === "asc" ? "smallest" : "largest"} first` + (a.sort_note ? `: ${a.sort_note}.` : ".");
  $("proc-table-box").replaceChildren(processTable(p, f, first, used));
  fitDetail();
  $("proc-nodes").replaceChildren(el("h3", {}, "Nodes"), nodeTable(f, first));
  $("proc-migrations").replaceChildren(el("h3", {}, "Page migrations by reason"), migrationTable(f, first));
  $("proc-source").replaceChildren(el("h3", {}, "Source"), sourceBlock(f));
}

/** rate is a per-second figure: "–" when unknown, or on the first frame, whose rates are not measured yet. */
const rate = (v: number | null | undefined, first: boolean) => (first || v === null || v === undefined ? "–" : si(v));
const node = (n: number) => (n < 0 ? "–" : String(n));

interface Col {
  label: string;
  title: string;
  /** the server's sort key this column sorts by; none: not sortable */
  sort?: string;
  num?: boolean;
  /** a name (user, command): cut to the column's width, whole in the cell's tooltip */
  name?: boolean;
  cell: (r: Proc) => string;
}

function processTable(p: Page, f: Frame, first: boolean, used: string): HTMLTableElement {
  const ids = f.nodes.map((n) => String(n.node));
  const pmu = f.source.pmu !== "" || f.processes.some((r) => r.pmu !== null);
  const cols: Col[] = [
    { label: "PID", title: "process ID", sort: "pid", num: true, cell: (r) => String(r.pid) },
    { label: "user", title: "owner", name: true, cell: (r) => r.user || "–" },
    { label: "command", title: "comm", name: true, cell: (r) => r.comm },
    { label: "CPU%", title: "CPU time over the interval, all threads (100% = one CPU)", sort: "cpu", num: true, cell: (r) => (first ? "–" : r.cpu_percent.toFixed(1)) },
    { label: "RSS", title: "resident memory", sort: "memory", num: true, cell: (r) => (r.rss_bytes ? bytes(r.rss_bytes) : "–") },
    ...ids.map<Col>((id) => ({
      label: `mem N${id}`,
      title: `resident memory on node ${id} (numa_maps: read for the top rows only; – where not read)`,
      num: true,
      cell: (r) => {
        const v = r.memory_by_node?.[id];
        return v === undefined ? "–" : bytes(v);
      },
    })),
    { label: "running", title: "nodes its threads last ran on", cell: (r) => ranges(r.nodes_running) || "–" },
    { label: "preferred", title: "NUMA balancing's preferred node", num: true, cell: (r) => node(r.preferred_node) },
    { label: "local/s", title: "NUMA hinting faults on local memory per second", sort: "local", num: true, cell: (r) => rate(r.numa_faults?.local, first) },
    { label: "remote/s", title: "NUMA hinting faults on remote memory per second", sort: "remote", num: true, cell: (r) => rate(r.numa_faults?.remote, first) },
    {
      label: "remote %",
      title: "share of the faults that were remote; ~: of the NUMA balancer's recent, decayed faults (/proc/PID/task/TID/sched), where no source gives fault rates",
      num: true,
      cell: (r) => remoteShare(r, first),
    },
    { label: "migrated/s", title: "pages migrated per second by NUMA balancing on its faults", sort: "migrated", num: true, cell: (r) => rate(r.pages_migrated, first) },
  ];
  if (pmu) {
    cols.push(
      { label: "LMA/s", title: `local DRAM accesses per second (PMU: ${f.source.pmu || "–"})`, num: true, cell: (r) => rate(r.pmu?.local, first) },
      { label: "RMA/s", title: `remote DRAM accesses per second (PMU: ${f.source.pmu || "–"})`, num: true, cell: (r) => rate(r.pmu?.remote, first) },
    );
  }
  const tr = el("tr");
  for (const c of cols) {
    const th = el("th", { class: c.num ? "num" : "", title: c.title }, c.label);
    if (c.sort) {
      const key = c.sort;
      th.dataset.sort = key;
      th.classList.add("sortable");
      if (key === used) {
        th.classList.add("sorted");
        th.dataset.dir = p.order;
      }
      th.onclick = () => {
        if (used === key) {
          p.sort = key;
          p.order = p.order === "asc" ? "desc" : "asc";
        } else {
          p.sort = key;
          p.order = SORT_FIRST[key] ?? "desc";
        }
        void poll();
      };
    } else th.classList.add("nosort");
    tr.append(th);
  }
  const body = el("tbody");
  for (const r of f.processes) {
    const row = el("tr", { "data-pid": String(r.pid), class: r.kernel_thread ? "clickable kthread" : "clickable" });
    if (r.kernel_thread) row.dataset.kthread = "1";
    if (r.pid === p.pid) row.classList.add("expanded");
    for (const c of cols) {
      const text = c.cell(r);
      const cls = (c.num ? "num" : c.name ? "name" : "") + (text === "–" ? " none" : "");
      row.append(c.name ? el("td", { class: cls, title: text }, el("span", {}, text)) : el("td", { class: cls }, text));
    }
    row.onclick = () => {
      p.pid = p.pid === r.pid ? null : r.pid;
      p.detail = null;
      p.detailError = "";
      for (const x of body.querySelectorAll("tr.expanded")) x.classList.remove("expanded");
      if (p.pid !== null) {
        row.classList.add("expanded");
        void loadDetail(p, r.pid);
      }
      drawDetail(p);
    };
    body.append(row);
  }
  if (!f.processes.length) body.append(el("tr", { class: "none" }, el("td", { colspan: String(cols.length) }, p.filter ? "no process matches the filter" : "no processes")));
  return el("table", { class: "ptable procs", id: "proc-table" }, el("thead", {}, tr), body);
}

async function loadDetail(p: Page, pid: number): Promise<void> {
  try {
    const d = readDetail(await getJSON(apiURL("/api/processes/detail", { pid: String(pid) })));
    if (p.pid !== pid) return;
    p.detail = d;
    p.detailError = "";
  } catch (e) {
    if (p.pid !== pid) return;
    p.detail = null;
    p.detailError = J.errorText(e);
  }
  drawDetail(p);
}

/** DETAIL_WIDTH is the drill-down's width beside the table, and GAP the space between them (style.css). */
const DETAIL_WIDTH = 500;
const GAP = 12;

/**
 * fitDetail puts the drill-down beside the process table where both fit whole, and under it
 * otherwise: beside a table it would cut, the columns the page is for (faults, REM%) would sit
 * out of sight at the table's right. It returns whether the drill-down is under the table.
 */
function fitDetail(): boolean {
  const main = $("proc-main");
  const table = $("proc-table-box").firstElementChild;
  if ($("proc-detail").hidden || !(table instanceof HTMLElement)) {
    main.classList.remove("stacked");
    return false;
  }
  main.classList.add("stacked"); // the table at the page's width: its own width, or all of it
  const stacked = table.offsetWidth + GAP + DETAIL_WIDTH > main.clientWidth;
  main.classList.toggle("stacked", stacked);
  return stacked;
}

/** drawDetail shows the drill-down of the process clicked (hidden when none). */
function drawDetail(p: Page): void {
  const box = $("proc-detail");
  const opening = box.hidden && p.pid !== null;
  box.hidden = p.pid === null;
  // Under the table, a drill-down just opened is brought into view.
  if (fitDetail() && opening) box.scrollIntoView({ block: "nearest" });
  if (p.pid === null) return box.replaceChildren();
  const close = el("button", { class: "close", title: "close" }, "×");
  close.onclick = () => {
    p.pid = null;
    for (const x of document.querySelectorAll("#proc-table tr.expanded")) x.classList.remove("expanded");
    drawDetail(p);
  };
  const d = p.detail;
  const head = el("h3", {}, `PID ${p.pid}`, d ? ` · ${d.comm}` : "", close);
  if (!d) return box.replaceChildren(head, el("p", { class: "muted" }, p.detailError ? `cannot read it: ${p.detailError}` : "reading…"));
  const first = p.last?.frame?.interval_seconds === 0;
  const ids = [...new Set(d.areas.flatMap((a) => Object.keys(a.bytes_by_node)))].sort((a, b) => Number(a) - Number(b));
  // The largest areas first, ties by address (the server sends them so; an older one by address).
  const total = (a: Area) => Object.values(a.bytes_by_node).reduce((x, y) => x + y, 0);
  const bySize = [...d.areas].sort((a, b) => total(b) - total(a) || a.start - b.start);
  const threads = textTable(
    { class: "ptable threads" },
    ["TID", "name", "CPU%", "CPU", "node", "preferred", "local/s", "remote/s"],
    2,
    d.threads.map((t) => [
      String(t.tid),
      t.comm,
      first ? "–" : t.cpu_percent.toFixed(1),
      t.cpu < 0 ? "–" : String(t.cpu),
      node(t.node),
      node(t.preferred_node),
      rate(t.numa_faults?.local, first),
      rate(t.numa_faults?.remote, first),
    ]),
  );
  const areas = textTable(
    { class: "ptable areas" },
    ["start", "kind", "mapping", "policy", ...ids.map((id) => `N${id}`)],
    4,
    bySize.map((a) => [
      a.start.toString(16),
      a.kind,
      a.path || "–",
      a.policy,
      ...ids.map((id) => {
        const v = a.bytes_by_node[id];
        return v === undefined ? "–" : bytes(v);
      }),
    ]),
  );
  box.replaceChildren(
    head,
    el("p", { class: "hint" }, d.hint || "nothing stands out in its placement"),
    ...(d.errors.length ? [el("ul", { class: "errors" }, ...d.errors.map((x) => el("li", {}, x)))] : []),
    el("h4", {}, `Threads (${d.threads.length})`),
    threads,
    ...categoryBlock(d),
    el("h4", {}, `Memory areas (${d.areas.length})`),
    d.areas.length ? areas : el("p", { class: "muted" }, "none read"),
  );
}

/**
 * categoryBlock is the drill-down's memory per node in numastat -p's rows: huge (hugetlb),
 * heap, stack (the main thread's), private (every other mapping, files included), total.
 */
function categoryBlock(d: Detail): HTMLElement[] {
  const c = d.memory_bytes_by_category;
  const all = d.memory_bytes_by_node;
  if (!c || !all) return [];
  const ids = Object.keys(all).sort((a, b) => Number(a) - Number(b));
  const sum = (m: Record<string, number>) => Object.values(m).reduce((x, y) => x + y, 0);
  const line = (name: string, m: Record<string, number>) => [name, bytes(sum(m)), ...ids.map((id) => bytes(m[id] ?? 0))];
  return [
    el("h4", { title: "as numastat -p PID: private is every mapping that is not hugetlb, the heap or the stack, file-backed ones included" }, "Memory by category (as numastat -p)"),
    textTable(
      { class: "ptable categories" },
      ["category", "total", ...ids.map((id) => `N${id}`)],
      1,
      [...CATEGORIES.map((k) => line(k, c[k])), line("total", all)],
    ),
  ];
}

/** textTable makes a table of text cells; the columns from num on are numbers (right-aligned). */
function textTable(attrs: Record<string, string>, head: string[], num: number, rows: string[][]): HTMLTableElement {
  const cls = (i: number) => (i >= num ? "num" : "");
  return el(
    "table",
    attrs,
    el("thead", {}, el("tr", {}, ...head.map((h, i) => el("th", { class: cls(i) }, h)))),
    el("tbody", {}, ...rows.map((r) => el("tr", {}, ...r.map((x, i) => el("td", { class: cls(i) }, x))))),
  );
}

function nodeTable(f: Frame, first: boolean): HTMLTableElement {
  return textTable(
    { class: "ptable pnodes", id: "proc-node-table" },
    ["node", "CPUs", "used", "free", "total", "CPU%", "local/s", "remote/s", "migrated/s", "promoted/s", "demoted/s", "numa_hit/s", "numa_miss/s"],
    2,
    f.nodes.map((n) => [
      String(n.node),
      ranges(n.cpus) || "–",
      bytes(n.memory_used_bytes),
      bytes(n.memory_free_bytes),
      bytes(n.memory_total_bytes),
      first ? "–" : n.cpu_percent.toFixed(1),
      rate(n.numa_faults?.local, first),
      rate(n.numa_faults?.remote, first),
      rate(n.pages_migrated, first),
      rate(n.pages_promoted, first),
      rate(n.pages_demoted, first),
      rate(n.numa_hit, first),
      rate(n.numa_miss, first),
    ]),
  );
}

function migrationTable(f: Frame, first: boolean): HTMLElement {
  if (f.migrations === null) return el("p", { class: "muted" }, "not read (see Source)");
  const rows = Object.entries(f.migrations).sort((a, b) => b[1] - a[1]);
  if (!rows.length) return el("p", { class: "muted" }, "none");
  return textTable(
    { class: "ptable migrations", id: "proc-migration-table" },
    ["reason", "pages/s"],
    1,
    rows.map(([reason, v]) => [reason, rate(v, first)]),
  );
}

function sourceBlock(f: Frame): HTMLElement {
  const s = f.source;
  const dl = el("dl", { class: "facts", id: "proc-source-list" });
  for (const [k, v, none] of [
    ["faults", s.faults, "none: local and remote rates are not measured (see below)"],
    ["migrations", s.migrations, "none"],
    ["memory per node", s.memory, "none"],
    ["PMU", s.pmu, "none"],
  ] as const) {
    dl.append(el("dt", {}, k), el("dd", { class: v ? "" : "muted" }, v || none));
  }
  if (s.lost_records) dl.append(el("dt", {}, "lost records"), el("dd", {}, `${s.lost_records}: the rates of the intervals that lost some are low`));
  const box = el("div", {}, dl);
  if (s.missing.length) box.append(el("h4", {}, "Missing"), el("ul", { class: "missing" }, ...s.missing.map((m) => el("li", {}, m))));
  return box;
}
