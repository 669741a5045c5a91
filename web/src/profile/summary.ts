// The profile's Summary page: what ran and how it ended, the facts of the
// run, the notes, the seven totals with their shares, numascope's hints, and
// the top lines by remote accesses and by first touch (a click opens the
// source). The right column gets the small access matrix (matrix.ts).

import type { Metric } from "../documents";
import { el } from "../dom";
import { int, share } from "../format";
import { METRICS, nodeList, value, where } from "./metrics";
import type { ProfileContext } from "./types";

/** summaryPage draws the summary into sec and returns its right column. */
export function summaryPage(page: HTMLElement, ctx: ProfileContext): HTMLElement {
  const { p, o } = ctx;
  // Facts, totals and hints on the left; the access matrix in small on the right.
  const sec = el("div", { class: "sumleft" });
  const right = el("div", { class: "sumright" });
  page.append(el("div", { class: "sumgrid" }, sec, right));
  const t = p.totals;
  // Every sampled access the file holds: local + remote + those of unknown
  // node (handled after the exit), so that the rows below add up to it.
  const unknown = p.accesses_node_unknown;
  const acc = value(t, "accesses") + unknown;
  const status = p.signal ? `killed by ${p.signal} (exit status ${p.exit_status})` : `exit status ${p.exit_status ?? "?"}`;
  sec.append(el("h2", { class: "command" }, p.command.join(" ")));
  const facts: [string, string, string?][] = [
    ["status", status, p.exit_status ? "bad" : ""],
    ["duration", `${p.duration_s.toFixed(2)} s`],
    ["nodes", nodeList(p.nodes)],
    ["NUMA balancing", p.numa_balancing ? "on" : "off (first touches only)", p.numa_balancing ? "" : "warn"],
    ["page faults sampled", int(p.samples)],
    ["lost", int(p.lost) + (p.lost ? " (ring buffer full: counts are lower bounds)" : ""), p.lost ? "bad" : ""],
    ["huge pages", int(p.huge_pages)],
    ["threads", int(p.threads.length)],
  ];
  const dl = el("dl", { class: "facts" });
  for (const [k, v, cls] of facts) dl.append(el("dt", {}, k), el("dd", { "data-fact": k, class: cls ?? "" }, v));
  sec.append(dl);
  if (p.notes.length) sec.append(el("h3", {}, "Notes"), el("ul", { class: "notes" }, ...p.notes.map((n) => el("li", {}, n))));

  sec.append(el("h3", {}, "Totals"));
  const shares: Partial<Record<Metric, [number, string]>> = {
    unpinned_first_touch: [t.first_touch, "of first touches"],
    local: [acc, "of sampled accesses"],
    remote: [acc, "of sampled accesses"],
    unpinned_page: [acc, "of sampled accesses"],
    unpinned_thread: [acc, "of sampled accesses"],
    unpinned_both: [acc, "of sampled accesses"],
  };
  const tb = el("tbody");
  for (const [k, label, , title] of METRICS) {
    const v = t[k];
    const s = shares[k];
    tb.append(el("tr", { "data-metric": k, title }, el("td", {}, label), el("td", { class: "num", "data-value": String(v) }, int(v)), el("td", { class: "num share" }, s ? `${share(v, s[0])} ${s[1]}` : "")));
    // Beside local and remote, the accesses counted as neither.
    if (k === "remote" && unknown) {
      tb.append(
        el(
          "tr",
          { "data-metric": "accesses_node_unknown", title: "sampled accesses counted neither local nor remote: numascope handled them after the program had exited, when the page's node could no longer be known" },
          el("td", {}, "node unknown (handled after the exit)"),
          el("td", { class: "num", "data-value": String(unknown) }, int(unknown)),
          el("td", { class: "num share" }, `${share(unknown, acc)} of sampled accesses`),
        ),
      );
    }
  }
  tb.append(el("tr", { "data-metric": "accesses", class: "sum" }, el("td", {}, unknown ? "sampled accesses (local + remote + node unknown)" : "sampled accesses (local + remote)"), el("td", { class: "num", "data-value": String(acc) }, int(acc)), el("td")));
  sec.append(el("table", { class: "ptable totals" }, el("thead", {}, el("tr", {}, el("th", {}, "metric"), el("th", { class: "num" }, "count"), el("th", { class: "num" }, "share"))), tb));

  sec.append(el("h3", {}, "Hints"));
  if (o.hints) {
    sec.append(
      o.hints.length
        ? el("ul", { class: "hints" }, ...o.hints.map((h) => el("li", {}, h)))
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
  ] as const) {
    const locs = p.locations.filter((l) => l.metrics[k] > 0).sort((a, b) => b.metrics[k] - a.metrics[k]);
    if (!locs.length) continue;
    const ol = el("ol", { class: "top", "data-metric": k });
    for (const l of locs.slice(0, 5)) {
      const a = el("a", { href: "#", title: l.file ? `${l.file}:${l.line}` : "no line information" }, l.file ? `${where(l)} (${l.function})` : l.function);
      a.onclick = (e) => {
        e.preventDefault();
        ctx.openSource(l.file, l.line);
      };
      ol.append(el("li", {}, el("span", { class: "num" }, `${int(l.metrics[k])} · ${share(l.metrics[k], t[k])}`), " ", a));
    }
    tops.append(el("div", {}, el("h3", {}, label), ol));
  }
  sec.append(tops);
  return right;
}
