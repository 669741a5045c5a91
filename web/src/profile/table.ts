// The profile pages' tables: sorted by a click on any header (again: the
// other way), optionally filtered, with bars behind numbers, expandable
// detail rows, and at most 1000 rows drawn until "show all". Every cell is
// text (src/dom.ts): the names are the profile's.

import { el } from "../dom";
import { int } from "../format";
import { maxOf } from "./metrics";
import type { Col } from "./types";

export interface TableOpts<R> {
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
export class SortTable<R> {
  table: HTMLTableElement;
  sort: string;
  desc: boolean;
  expanded = new Set<string>();
  /** rows drawn at most, until "show all": a big program has tens of thousands of lines */
  limit = 1000;
  private thead: HTMLTableSectionElement;
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
    this.thead = el("thead", {}, tr);
    this.tbody = el("tbody");
    this.table.append(this.thead, this.tbody);
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
    for (const th of this.thead.querySelectorAll("th")) {
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
