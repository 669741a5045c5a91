// The profile's Threads page: every thread of the program and its children,
// pinned or not, with every metric; a click on a row expands its pinning log
// (every affinity numascope saw, when, and how).

import type { Thread } from "../documents";
import { el } from "../dom";
import { metricCols, nodeList } from "./metrics";
import { SortTable } from "./table";
import type { Col, ProfileContext } from "./types";

/** pinned: the last affinity spans exactly one node. */
const pinned = (th: Thread) => th.nodes.length === 1;

export function threadsPage(sec: HTMLElement, ctx: ProfileContext): void {
  const nodes = ctx.p.nodes.length;
  sec.append(el("p", { class: "muted" }, "Every thread of the program and its children. A thread is pinned when its last CPU affinity spans exactly one node. Click a row for its pinning log: every affinity numascope saw, when."));
  const cols: Col<Thread>[] = [
    { key: "tid", label: "tid", num: true, get: (r) => r.tid, text: (r) => String(r.tid) },
    { key: "pid", label: "pid", num: true, get: (r) => r.pid, text: (r) => String(r.pid) },
    { key: "comm", label: "comm", get: (r) => r.comm ?? "" },
    {
      key: "nodes",
      label: "nodes",
      title: "node set of the last affinity",
      get: (r) => (pinned(r) ? 0 : 1) * 1000 + (r.nodes[0] ?? 0),
      text: (r) => (pinned(r) ? `pinned: node ${r.nodes[0]}` : `unpinned: ${nodeList(r.nodes)}${nodes && r.nodes.length === nodes ? " (all)" : ""}`),
    },
    { key: "changes", label: "affinities", num: true, title: "entries in the pinning log", get: (r) => r.binding_log.length, text: (r) => String(r.binding_log.length) },
    ...metricCols<Thread>((r) => r.metrics),
  ];
  const t = new SortTable<Thread>(cols, ctx.p.threads, {
    cls: "threads",
    sort: "tid",
    desc: false,
    rowKey: (r) => String(r.tid),
    rowAttrs: (r) => ({ "data-tid": String(r.tid), class: pinned(r) ? "pinned" : "unpinned" }),
    detail: bindingLog,
    empty: "no threads in this profile",
  });
  sec.append(t.table);
}

/** bindingLog is a thread's pinning log as a table. */
function bindingLog(th: Thread): HTMLElement {
  const log = th.binding_log;
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
    const one = b.nodes.length === 1;
    const tr = el("tr", { "data-i": String(i) }, el("td", { class: "num" }, b.time_s.toFixed(3)), el("td", {}, b.cpus), el("td", {}, nodeList(b.nodes)), el("td", { class: "muted" }, one ? "pinned" : "unpinned"));
    if (via) tr.append(el("td", {}, b.via ?? ""));
    tb.append(tr);
  });
  box.append(el("table", { class: "ptable binding-log" }, el("thead", {}, head), tb));
  return box;
}
