// The profile's Access matrix page: a heatmap of the sampled accesses, rows
// the accessing thread's node (unpinned threads on their own row), columns
// the page's node, with row and column totals and each row's remote share;
// and its small copy on the summary.

import { el } from "../dom";
import { int, share } from "../format";
import { maxOf } from "./metrics";
import type { ProfileContext } from "./types";

/** matrixPage draws the access matrix into sec and returns its table. */
export function matrixPage(sec: HTMLElement, ctx: ProfileContext): HTMLTableElement {
  const m = ctx.p.access_matrix;
  const rows = m.thread_nodes,
    cols = m.page_nodes,
    counts = m.counts;
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
      td.append(el("span", { class: "count" }, int(v)), el("span", { class: "rowpct" }, rs ? share(v, rs) : ""));
      const kind = r === -1 ? "by unpinned threads (locality left to the scheduler)" : diag ? "local" : "remote";
      td.title = `${r === -1 ? "unpinned threads" : `threads on node ${r}`} → pages on node ${c}: ${int(v)} sampled accesses, ${kind}\n${share(v, rs)} of the row, ${share(v, all)} of all sampled accesses`;
      tr.append(td);
    });
    tr.append(el("td", { class: "rowsum num" }, int(rs)), el("td", { class: "rowsum num", title: r === -1 ? "unpinned threads: local or remote depends on where each ran" : "" }, r === -1 ? "–" : `${int(remote)} (${share(remote, rs)})`));
    tb.append(tr);
  });
  const foot = el("tr", { class: "colsum" }, el("th", {}, "column total"));
  cols.forEach((_c, j) => foot.append(el("td", { class: "num" }, int(colSum[j]))));
  foot.append(el("td", { class: "num" }, int(all)), el("td"));
  tb.append(foot);
  tbl.append(tb);
  sec.append(tbl);
  const unknown = ctx.p.accesses_node_unknown;
  if (!all && !unknown) sec.append(el("p", { class: "muted none" }, "No sampled accesses in this profile: " + (ctx.p.notes.join("; ") || "only first touches are known (one node, or NUMA balancing off).")));
  // Accesses of unknown node have no column: say they exist rather than let the total pass for all of them.
  if (unknown) sec.append(el("p", { class: "muted unknown-node", "data-value": String(unknown) }, `Not in the matrix: ${int(unknown)} sampled accesses of unknown node (handled after the program had exited), counted neither local nor remote.`));
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
  return tbl;
}

/** miniMatrix puts a small copy of the heatmap into the summary's right column; a click opens the full one. */
export function miniMatrix(right: HTMLElement, table: HTMLTableElement, ctx: ProfileContext): void {
  const mini = table.cloneNode(true) as HTMLTableElement;
  mini.classList.add("mini");
  mini.title = "open the access matrix";
  mini.onclick = () => ctx.show("matrix");
  right.append(el("h3", {}, "Access matrix"), mini, el("p", { class: "muted" }, "rows: the accessing thread's node; columns: the page's node; outlined: local"));
}
