// The profile's Source page: a file with the seven metrics of each line
// beside the code, lines with counts tinted by a chosen metric, the line
// asked for outlined and scrolled to, the file's hot lines to jump between,
// and allocation sites marked on their lines. The code comes from the server
// (numascope view) and, like every name, is shown as text; big files are
// drawn SOURCE_WINDOW lines at a time.

import type { Allocation, Metrics } from "../documents";
import { el } from "../dom";
import { int } from "../format";
import { errorText } from "../json";
import { add, maxOf, METRICS, value, zero } from "./metrics";
import type { Key, ProfileContext, SourceFetcher, SourceFile } from "./types";

/** SOURCE_WINDOW is how many lines of a source file are drawn at once. */
const SOURCE_WINDOW = 4000;

/** The Source page's controls: open a file at a line. */
export interface SourceView {
  open(file: string, line: number, heat?: Key): void;
}

export function sourcePage(sec: HTMLElement, ctx: ProfileContext): SourceView {
  const { p, o } = ctx;
  const fetched = new Map<string, Promise<SourceFile>>();
  let srcFile = "";
  let srcLine = 0;
  /** the window of lines drawn [lo, hi) (indexes into the lines shown), null: around srcLine */
  let srcWin: [number, number] | null = null;
  let heatBy: Key = "weight";

  const files = new Map<string, Metrics>();
  for (const l of p.locations) {
    if (!l.file) continue;
    const m = files.get(l.file) ?? zero();
    add(m, l.metrics);
    files.set(l.file, m);
  }
  // Files only allocation sites name: listed, with no counts of their own.
  for (const a of p.allocations ?? []) if (a.file && !files.has(a.file)) files.set(a.file, zero());
  const bar = el("div", { class: "pbar" });
  const pick = el("select", { id: "psource-file" });
  pick.append(el("option", { value: "" }, "choose a source file…"));
  for (const [f, m] of [...files].sort((a, b) => value(b[1], "weight") - value(a[1], "weight"))) {
    pick.append(el("option", { value: f }, `${f} (${int(value(m, "first_touch"))} first touches, ${int(value(m, "accesses"))} accesses)`));
  }
  pick.onchange = () => pick.value && open(pick.value, 0);
  const heat = el("select", { id: "psource-heat", title: "what colours the lines" });
  const heats: [Key, string][] = [["weight", "first touch + accesses"], ...METRICS.map(([k, l]): [Key, string] => [k, l]), ["accesses", "accesses"]];
  for (const [k, label] of heats) heat.append(el("option", { value: k }, `heat: ${label}`));
  heat.onchange = () => {
    heatBy = heats.find(([k]) => k === heat.value)?.[0] ?? "weight";
    void render();
  };
  bar.append(pick, heat);
  if (o.fetch) {
    const sp = o.sourcePath ?? [];
    bar.append(el("span", { class: "muted sourcepath", title: "where numascope view looks for source files: the recorded path's suffixes under each --source-path directory, and nowhere else" }, sp.length ? `source path: ${sp.join(":")}` : "no source served: restart view with --source-path DIR"));
  }
  const box = el("div", { class: "psource" }, el("p", { class: "muted" }, "Click a line in Functions & lines (or pick a file above) to see its source with the metrics of every line."));
  sec.append(bar, box);
  if (!files.size) box.replaceChildren(el("p", { class: "muted" }, "This profile has no line information (build the program with -g)."));

  function open(file: string, line: number, h?: Key): void {
    if (h) heatBy = h;
    srcFile = file;
    srcLine = line;
    srcWin = null;
    ctx.show("source");
    void render();
  }

  /** read asks the server for a file's lines once (again after a failure: a restarted server may find it). */
  async function read(fetch: SourceFetcher, file: string): Promise<{ src: SourceFile | null; why: string }> {
    let pr = fetched.get(file);
    if (!pr) {
      pr = fetch(file);
      fetched.set(file, pr);
    }
    try {
      return { src: await pr, why: "" };
    } catch (e) {
      fetched.delete(file);
      return { src: null, why: errorText(e) };
    }
  }

  async function render(): Promise<void> {
    pick.value = srcFile;
    heat.value = heatBy;
    const file = srcFile,
      line = srcLine;
    box.replaceChildren();
    if (!file) {
      box.append(el("p", { class: "muted source-missing" }, "This location has no line information: the code was built without -g (or the address is in no known file). Rebuild with -g to see lines."));
      return;
    }
    // Per-line metrics of this file (several functions can share a line: summed).
    const per = new Map<number, Metrics>();
    const fns = new Map<number, Set<string>>();
    for (const l of p.locations) {
      if (l.file !== file) continue;
      const m = per.get(l.line) ?? zero();
      add(m, l.metrics);
      per.set(l.line, m);
      fns.set(l.line, (fns.get(l.line) ?? new Set()).add(l.function));
    }
    const allocAt = new Map<number, Allocation[]>();
    for (const a of p.allocations ?? []) if (a.file === file) allocAt.set(a.line ?? 0, [...(allocAt.get(a.line ?? 0) ?? []), a]);

    const head = el("div", { class: "srchead" }, el("h3", {}, file));
    box.append(head);
    const side = el("aside", { class: "hotlines" });
    const code = el("div", { class: "srccode" });
    box.append(el("div", { class: "srcbody" }, side, code));

    // Hot lines: this file's lines with counts, by the heat metric.
    const hot = [...per].filter(([, m]) => value(m, heatBy) > 0 || value(m, "weight") > 0);
    hot.sort((a, b) => value(b[1], heatBy) - value(a[1], heatBy) || value(b[1], "weight") - value(a[1], "weight") || a[0] - b[0]);
    side.append(el("h4", {}, `Hot lines (${hot.length})`));
    const ol = el("ol", { class: "hot" });
    for (const [n, m] of hot) {
      const a = el("a", { href: "#", "data-line": String(n) }, `${n}`);
      a.onclick = (e) => {
        e.preventDefault();
        srcLine = n;
        if (!jump(code, n)) {
          // Outside the lines drawn: draw the window around it.
          srcWin = null;
          void render();
        }
      };
      ol.append(el("li", {}, a, el("span", { class: "fn" }, ` ${[...(fns.get(n) ?? [])].join(", ")}`), el("span", { class: "num" }, ` ${int(value(m, heatBy))}`)));
    }
    side.append(ol);

    let src: SourceFile | null = null;
    let why = "Source is not available for a profile opened from disk: open it with numascope view FILE --source-path DIR to see the code.";
    if (o.fetch) {
      code.append(el("p", { class: "muted" }, `reading ${file}…`));
      ({ src, why } = await read(o.fetch, file));
      if (srcFile !== file) return; // another file was opened meanwhile
    }
    code.replaceChildren();
    const lines = src?.lines ?? [];
    if (src) head.append(el("span", { class: "muted path" }, src.path === file ? "" : `read from ${src.path}`));
    else code.append(el("p", { class: "source-missing" }, why));
    const maxLine = maxOf(per.keys());
    if (src && maxLine > lines.length) {
      code.append(el("p", { class: "warn stale" }, `The profile names line ${maxLine} but ${src.path} has ${lines.length} lines: the source has changed since the profile was taken, or it is another file of that name.`));
    }
    // The table: line number, metrics, code. Without the source, only the lines with counts.
    const shown = src ? lines.map((_, i) => i + 1) : [...per.keys()].filter((n) => n > 0).sort((a, b) => a - b);
    const heatMax = maxOf([...per.values()].map((m) => value(m, heatBy)));
    const tbl = el("table", { class: "src" });
    const hr = el("tr", {}, el("th", { class: "ln" }, "line"));
    for (const [k, , short, title] of METRICS) hr.append(el("th", { class: "num", title: `${k}: ${title}` }, short));
    hr.append(el("th", { class: "code" }, src ? "" : "(source not available)"));
    tbl.append(el("thead", {}, hr));
    // Big files are drawn SOURCE_WINDOW lines at a time around the line asked
    // for (laying out 100,000 table rows takes seconds), with buttons for more.
    let [lo, hi] = srcWin ?? [0, shown.length];
    if (!srcWin && shown.length > SOURCE_WINDOW) {
      const at = Math.max(0, shown.indexOf(line));
      lo = Math.max(0, Math.min(at - SOURCE_WINDOW / 2, shown.length - SOURCE_WINDOW));
      hi = lo + SOURCE_WINDOW;
    }
    srcWin = [lo, hi];
    const more = (dir: "up" | "down", n: number) => {
      const b = el("button", { "data-dir": dir }, dir === "up" ? `show ${int(n)} lines above` : `show ${int(n)} lines below`);
      b.onclick = () => {
        srcWin = dir === "up" ? [Math.max(0, lo - SOURCE_WINDOW), hi] : [lo, Math.min(shown.length, hi + SOURCE_WINDOW)];
        srcLine = 0;
        void render();
      };
      return el("p", { class: "more" }, b);
    };
    if (lo > 0) code.append(more("up", Math.min(lo, SOURCE_WINDOW)));
    // Lines without counts get one empty cell for the metrics.
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
      const h = heatMax ? value(m, heatBy) / heatMax : 0;
      tr.className = "hasdata";
      if (h > 0) tr.style.setProperty("--heat", `${Math.round(8 + 40 * Math.sqrt(h))}%`);
      tr.title =
        `${[...(fns.get(n) ?? [])].join(", ")}: ` +
        METRICS.filter(([k]) => value(m, k))
          .map(([k, label]) => `${label} ${int(value(m, k))}`)
          .join(", ");
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
    if (line) jump(code, line);
  }

  return { open };
}

/** jump outlines line n and scrolls to it; false when it is not drawn. */
function jump(code: HTMLElement, n: number): boolean {
  for (const x of code.querySelectorAll("tr.target")) x.classList.remove("target");
  const tr = code.querySelector<HTMLElement>(`tr[data-line="${CSS.escape(String(n))}"]`);
  if (!tr) return false;
  tr.classList.add("target");
  // Scroll the code box only, not the page (the table is wider than the screen).
  const box = code.getBoundingClientRect(),
    at = tr.getBoundingClientRect();
  code.scrollTop += at.top - box.top - (box.height - at.height) / 2;
  return true;
}
