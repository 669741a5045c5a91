// The profile's Memory page: the metrics per kind of memory (heap, stack,
// anon, file...), and the allocation sites (the code that mapped the
// memory, with the metrics of its pages) when the profile has them; a click
// on a site opens its source.

import type { Allocation, Mapping } from "../documents";
import { el } from "../dom";
import { base, bytes } from "../format";
import { metricCols } from "./metrics";
import { SortTable } from "./table";
import type { ProfileContext } from "./types";

export function memoryPage(sec: HTMLElement, ctx: ProfileContext): void {
  sec.append(el("h3", {}, "Where the memory came from"));
  sec.append(el("p", { class: "muted" }, "Metrics per kind of memory: heap (brk), stack (every thread's: the main one's, and those mapped with MAP_STACK), anon (anonymous mmap: large mallocs, arenas), file, other, unknown (the process ended before the lookup)."));
  const mt = new SortTable<Mapping>(
    [{ key: "kind", label: "kind", get: (r) => r.kind ?? "" }, { key: "file", label: "file", get: (r) => r.file ?? "" }, ...metricCols<Mapping>((r) => r.metrics)],
    ctx.p.mappings,
    { cls: "mappings", sort: "", rowAttrs: (r) => ({ "data-kind": r.kind ?? "" }), empty: "no mappings in this profile" },
  );
  sec.append(mt.table);
  const allocs = ctx.p.allocations;
  if (!allocs) return;
  sec.append(el("h3", {}, "Allocation sites"));
  sec.append(el("p", { class: "muted" }, "The code that allocated the memory (malloc, mmap…), with the metrics of the pages it returned. Click a row for its source."));
  const at = new SortTable<Allocation>(
    [
      { key: "function", label: "function", get: (r) => r.function ?? "" },
      { key: "where", label: "file:line", get: (r) => `${r.file ?? ""} ${String(r.line ?? 0).padStart(8, "0")}`, text: (r) => (r.file ? `${base(r.file)}:${r.line}` : "(no line information)") },
      { key: "kind", label: "kind", get: (r) => r.kind ?? "" },
      { key: "calls", label: "calls", num: true, bar: true, get: (r) => r.calls ?? 0 },
      { key: "bytes", label: "bytes", num: true, bar: true, get: (r) => r.bytes ?? 0, text: (r) => bytes(r.bytes ?? 0) },
      ...metricCols<Allocation>((r) => r.metrics),
    ],
    allocs,
    {
      cls: "allocations",
      sort: "",
      rowAttrs: (r) => ({ "data-function": r.function ?? "", "data-file": r.file ?? "", "data-line": String(r.line ?? 0) }),
      onRow: (r) => ctx.openSource(r.file ?? "", r.line ?? 0),
      empty: "no allocation sites in this profile",
    },
  );
  sec.append(at.table);
}
