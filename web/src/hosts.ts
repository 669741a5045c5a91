// The hosts page (`numascope view a.jsonl.zst b.jsonl.zst ...`): several
// hosts' recordings, e.g. the ranks of one MPI job, as small multiples on one
// time axis. Each recording's t = 0 is placed at its wall-clock start minus
// the earliest (offset_s, computed by the server from the headers' start), so
// that what happened at the same moment lines up across the plots; the x
// scale, the y range and the cursor are shared. Host names come from the
// files and are shown as text (el()). The page shown is this module's own
// state.

import uPlot from "uplot";
import { el } from "./dom";
import { si } from "./format";
import { palette } from "./plots";
import type { HostRecording, HostsHello } from "./protocol";

/** The hosts page: several hosts' recordings on one time axis, the event shown and one uPlot per host (destroyed when the page is redrawn). */
interface HostsPage {
  hello: HostsHello;
  event: string;
  plots: { host: number; u: uPlot }[];
}

/** the page shown, or null */
let shown: HostsPage | null = null;

/** showHostsPage draws the recordings of h into root, in place of the page shown before. */
export function showHostsPage(root: HTMLElement, h: HostsHello): void {
  for (const p of shown?.plots ?? []) p.u.destroy();
  shown = { hello: h, event: "", plots: [] };
  renderHosts(root, shown);
}

/** What the tests read of one small multiple: where its first point lies, and the shared scale. */
export interface HostPlotInfo {
  host: string;
  file: string;
  offset_s: number;
  /** the first point's x, in seconds on the shared axis, and in CSS pixels from the plot's left edge */
  firstT: number | null;
  firstX: number | null;
  xmin: number;
  xmax: number;
  /** the plotting area's width in CSS pixels */
  width: number;
  points: number;
}

/** events lists every column name of the recordings, in order of first appearance, with how many hosts have it. */
function events(hosts: HostRecording[]): { name: string; n: number }[] {
  const count = new Map<string, number>();
  for (const h of hosts) for (const name of new Set(h.columns.map((c) => c.name))) count.set(name, (count.get(name) ?? 0) + 1);
  return [...count].map(([name, n]) => ({ name, n }));
}

/** series is one host's values of the event on the shared axis (its offset added to every time); null when it lacks the event. */
function series(h: HostRecording, event: string): [number[], (number | null)[]] | null {
  const i = h.columns.findIndex((c) => c.name === event);
  if (i < 0) return null;
  const xs: number[] = [];
  const ys: (number | null)[] = [];
  for (const r of h.rows) {
    const t = r[0];
    if (t === null) continue;
    xs.push(h.offset_s + t);
    ys.push(r[i + 1] ?? null);
  }
  return [xs, ys];
}

/** renderHosts draws the page into root: the event picker, then one card per host. */
function renderHosts(root: HTMLElement, page: HostsPage): void {
  const h = page.hello;
  const evs = events(h.hosts);
  if (!page.event) page.event = (evs.find((e) => e.n === h.hosts.length) ?? evs[0])?.name ?? "";
  const select = el("select", { id: "hosts-event", "aria-label": "event" });
  for (const e of evs) {
    const o = el("option", { value: e.name }, e.n === h.hosts.length ? e.name : `${e.name} (${e.n} of ${h.hosts.length} hosts)`);
    o.selected = e.name === page.event;
    select.append(o);
  }
  select.onchange = () => {
    page.event = select.value;
    renderHosts(root, page);
  };
  const unit = h.hosts.flatMap((x) => x.columns).find((c) => c.name === page.event);
  const head = el(
    "div",
    { class: "hosts-head" },
    el("h2", {}, `${h.hosts.length} hosts on one time axis`),
    el("p", { class: "muted" }, `x: seconds since the earliest start, ${h.start}; each recording is placed at its own wall-clock start. `, unit ? `${unit.desc}${unit.unit ? ` (${unit.unit}${unit.kind === "counter" && unit.unit !== "%" ? "/s" : ""})` : ""}` : ""),
    el("label", {}, "event ", select),
  );
  for (const p of page.plots) p.u.destroy();
  page.plots = [];
  const grid = el("div", { class: "hosts-grid" });
  root.replaceChildren(head, grid);

  const data = h.hosts.map((x) => series(x, page.event));
  let xmax = 0;
  for (const x of h.hosts) xmax = Math.max(xmax, x.offset_s + x.duration_s);
  if (!(xmax > 0)) xmax = 1;
  let ymin = 0;
  let ymax = 0;
  for (const d of data) {
    for (const y of d?.[1] ?? []) {
      if (y === null) continue;
      ymin = Math.min(ymin, y);
      ymax = Math.max(ymax, y);
    }
  }
  ymax = ymax > ymin ? ymax + (ymax - ymin) * 0.05 : ymin + 1; // headroom: a flat line at the top stays visible

  const width = Math.max(320, (root.clientWidth || 900) - 40);
  h.hosts.forEach((x, k) => {
    const label = el("h3", { class: "host-name" }, x.host || "(no host name)");
    const meta = el("div", { class: "host-meta muted" }, `${x.file} · ${x.kernel || "kernel unknown"} · starts at +${si(x.offset_s)} s (${x.start}) · ${x.samples} samples${x.decimated ? " (decimated)" : ""}`);
    const box = el("div", { class: "host-plot" });
    const card = el("figure", { class: "host-multiple", "data-host-index": String(k) }, label, meta, box);
    grid.append(card);
    const d = data[k];
    if (!d) {
      box.append(el("p", { class: "muted" }, `${page.event} was not recorded on this host`));
      return;
    }
    const opts: uPlot.Options = {
      width,
      height: 140,
      cursor: { sync: { key: "numascope-hosts" }, drag: { x: false, y: false } },
      legend: { show: false },
      scales: { x: { time: false, range: () => [0, xmax] }, y: { range: () => [ymin, ymax] } },
      // No axis label: every plot keeps the same geometry, so that the same time is at the same x on each.
      axes: [{}, { size: 60, values: (_u, vals) => vals.map((v) => si(v)) }],
      series: [{}, { label: x.host, stroke: palette[k % palette.length], width: 1.5, points: { show: false } }],
    };
    page.plots.push({ host: k, u: new uPlot(opts, d, box) });
  });
}

/** hostPlots says where each small multiple's first point lies (for the tests). */
export function hostPlots(): HostPlotInfo[] {
  const page = shown;
  if (!page) return [];
  return page.plots.map(({ host, u }) => {
    const x = page.hello.hosts[host];
    const xs = u.data[0];
    const first = xs.length ? xs[0] : null;
    return {
      host: x.host,
      file: x.file,
      offset_s: x.offset_s,
      firstT: first,
      firstX: first === null ? null : u.valToPos(first, "x"),
      xmin: u.scales.x.min ?? NaN,
      xmax: u.scales.x.max ?? NaN,
      width: u.bbox.width / devicePixelRatio,
      points: xs.length,
    };
  });
}
