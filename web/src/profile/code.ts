// The profile's Functions & lines page: the locations by function (summed
// over its lines) or by line, with every metric plus sampled accesses and
// the remote share; sortable, filtered by function or file, and a click on
// a row opens its source at that line (a function at its hottest line),
// tinted by the metric the table is sorted by.

import type { Location, Metrics } from "../documents";
import { el } from "../dom";
import { add, isHeatKey, metricCols, value, where, zero } from "./metrics";
import { SortTable } from "./table";
import type { Col, ProfileContext } from "./types";

/** A row: a line, or a function with how many lines it has and its hottest one. */
interface LineRow {
  function: string;
  file: string;
  line: number;
  metrics: Metrics;
  lines?: number;
  hot?: Location;
}

/** functions aggregates the locations by function (and file). */
function functions(locations: Location[]): LineRow[] {
  const by = new Map<string, LineRow & { lines: number; hot: Location }>();
  for (const l of locations) {
    const k = `${l.function}\u0000${l.file}`;
    let f = by.get(k);
    if (!f) {
      f = { function: l.function, file: l.file, line: l.line, metrics: zero(), lines: 0, hot: l };
      by.set(k, f);
    }
    add(f.metrics, l.metrics);
    f.lines++;
    if (value(l.metrics, "weight") > value(f.hot.metrics, "weight")) f.hot = l;
    if (l.line && (!f.line || l.line < f.line)) f.line = l.line;
  }
  return [...by.values()];
}

export function codePage(sec: HTMLElement, ctx: ProfileContext): void {
  let byFunction = true;
  let filterText = "";
  const bar = el("div", { class: "pbar" });
  const fn = el("input", { type: "radio", name: "pgroup", id: "pgroup-function", checked: "" });
  const ln = el("input", { type: "radio", name: "pgroup", id: "pgroup-line" });
  const filter = el("input", { type: "search", id: "pfilter", placeholder: "filter functions and files", size: "28" });
  bar.append(el("label", {}, fn, " by function"), el("label", {}, ln, " by line"), filter, el("span", { class: "muted" }, "click a header to sort, a row to open its source"));
  sec.append(bar);
  const rows = (): LineRow[] => (byFunction ? functions(ctx.p.locations) : ctx.p.locations.map((l) => ({ ...l })));
  const cols: Col<LineRow>[] = [
    { key: "function", label: "function", get: (r) => r.function },
    {
      key: "where",
      label: "file:line",
      get: (r) => `${r.file} ${String(r.line).padStart(8, "0")}`,
      text: (r) => (r.file ? `${where(r)}${r.lines && r.lines > 1 ? ` (${r.lines} lines)` : ""}` : "(no line information)"),
    },
    ...metricCols<LineRow>((r) => r.metrics),
  ];
  const t = new SortTable<LineRow>(cols, rows(), {
    cls: "code",
    // The profile's own order: first touch + sampled accesses, most first.
    sort: "",
    filter: (r) => !filterText || r.function.toLowerCase().includes(filterText) || r.file.toLowerCase().includes(filterText),
    rowAttrs: (r) => ({ "data-function": r.function, "data-file": r.file, "data-line": String(r.line), title: r.file ? `${r.file}:${r.line}` : "no line information: build with -g" }),
    onRow: (r) => {
      const at = r.hot ?? r;
      ctx.openSource(at.file, at.line, isHeatKey(t.sort) ? t.sort : "weight");
    },
    empty: "no locations match",
  });
  fn.onchange = ln.onchange = () => {
    byFunction = fn.checked;
    t.setRows(rows());
  };
  filter.oninput = () => {
    filterText = filter.value.trim().toLowerCase();
    t.render();
  };
  sec.append(t.table);
}
