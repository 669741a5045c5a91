// numascope's web client: live samples from `numascope live`, recordings
// from `numascope view`, or a file loaded from disk with no server at all.
// The protocol is documented in docs/live-protocol.md.

import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import "./style.css";
import { Store, decimate, totals, totalsCSV, type Column, type Mark, type Total } from "./data";
import { parseFile } from "./parse";
import { el } from "./dom";
import { renderReport, asExperiment, type Experiment } from "./report";
import { renderProfile, profileIn, profileMessage, profileDisconnected, serverSource, type ProfileOptions } from "./profile";

type Mode = "none" | "live" | "view" | "file" | "experiment" | "profile";

interface State {
  interval_s: number;
  paused: boolean;
  discrete: boolean;
  events: string[];
  recording: string;
}

interface Shown {
  key: string; // unique per display series
  label: string;
  col: Column; // the column (for a synthesised sum: the first summed)
  raw: number[]; // store columns it reads
  f: (k: number) => number;
  scale: "y" | "pct";
  sum?: boolean; // synthesised here: the sum over nodes of raw
}

interface Group {
  title: string;
  series: Shown[];
}

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

const app = {
  mode: "none" as Mode,
  store: new Store(),
  hello: null as any,
  state: { interval_s: 1, paused: false, discrete: false, events: [], recording: "" } as State,
  perNode: false,
  pct: false,
  hidden: new Set<string>(),
  follow: true,
  windowS: 60,
  xr: { min: 0, max: 60 },
  ws: null as WebSocket | null,
  received: 0,
  duration: 0,
  fetched: null as null | { t0: number; t1: number; res: number },
  pending: null as null | { t0: number; t1: number },
  reqID: 0,
  remoteTotals: null as null | { t0: number; t1: number; columns: any[]; sums?: any[]; key: string },
  lastTotals: [] as Total[],
  report: null as Experiment | null,
};

// ---------------------------------------------------------------- format

function fmt(v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  const a = Math.abs(v);
  if (a >= 1e15) return v.toExponential(2);
  for (const [d, s] of [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]] as [number, string][]) {
    if (a >= d) return (v / d).toFixed(a / d >= 100 ? 0 : a / d >= 10 ? 1 : 2) + s;
  }
  if (a === 0 || a >= 100) return v.toFixed(0);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(3);
}

const palette = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#ea580c", "#4f46e5", "#0d9488", "#be123c"];
// One color per event, the same in every small multiple: events in column
// order get the palette in turn.
const colors = new Map<string, string>();
function color(event: string): string {
  let c = colors.get(event);
  if (!c) {
    c = palette[colors.size % palette.length];
    colors.set(event, c);
  }
  return c;
}

function showError(msg: string): void {
  const e = $("error");
  e.textContent = msg;
  e.hidden = !msg;
}

function setStatus(msg: string): void {
  $("status").textContent = msg;
}

// ---------------------------------------------------------------- what to show

function sensorSources(sensor: string): number {
  const list = app.hello?.catalog ?? app.hello?.sensors ?? [];
  const s = list.find((x: any) => x.name === sensor);
  return s ? s.sources.length : 1;
}

function perSource(c: Column): boolean {
  return c.sources.length === 1 && sensorSources(c.sensor) > 1;
}

function activeColumns(): number[] {
  // Live: the current column set; recordings: every column.
  if (app.mode === "live") return app.store.cur;
  return app.store.cols.map((_, i) => i);
}

function shown(i: number, label: string): Shown {
  const s = app.store;
  const c = s.cols[i];
  const a = () => s.v[i];
  let f = (k: number) => a()[k];
  let scale: "y" | "pct" = c.unit === "%" ? "pct" : "y";
  if (app.pct && c.unit !== "%" && c.max && c.max > 0) {
    const m = 100 / c.max;
    f = (k: number) => a()[k] * m;
    scale = "pct";
  }
  return { key: c.name, label, col: c, raw: [i], f, scale };
}

/** groups builds what is plotted: one group (summed) or one per node. */
function groups(): Group[] {
  const s = app.store;
  const act = activeColumns();
  if (!app.perNode) {
    const out: Shown[] = [];
    const direct = new Set<string>();
    for (const i of act) {
      const c = s.cols[i];
      if (!perSource(c)) {
        out.push(shown(i, `${c.sensor}.${c.event}`));
        direct.add(`${c.sensor}.${c.event}`);
      }
    }
    // Per-node columns without a summed twin: sum them here.
    const sums = new Map<string, number[]>();
    for (const i of act) {
      const c = s.cols[i];
      const k = `${c.sensor}.${c.event}`;
      if (perSource(c) && !direct.has(k)) sums.set(k, [...(sums.get(k) ?? []), i]);
    }
    for (const [k, idx] of sums) {
      const c = s.cols[idx[0]];
      const max = idx.reduce((m, i) => m + (s.cols[i].max ?? 0), 0);
      const sc: Column = { ...c, name: k, sources: idx.flatMap((i) => s.cols[i].sources), max: max || undefined };
      let f = (kk: number) => {
        let sum = 0,
          any = false;
        for (const i of idx) {
          const x = s.v[i][kk];
          if (!Number.isNaN(x)) {
            sum += x;
            any = true;
          }
        }
        return any ? sum : NaN;
      };
      let scale: "y" | "pct" = c.unit === "%" ? "pct" : "y";
      if (c.unit === "%") {
        const g = f;
        f = (kk) => g(kk) / idx.length;
      } else if (app.pct && max > 0) {
        const g = f;
        f = (kk) => (g(kk) * 100) / max;
        scale = "pct";
      }
      out.push({ key: k, label: `${k} (Σ nodes)`, col: sc, raw: idx, f, scale, sum: true });
    }
    return [{ title: "all nodes (summed)", series: out }];
  }
  const bySrc = new Map<string, Shown[]>();
  const other: Shown[] = [];
  for (const i of act) {
    const c = s.cols[i];
    if (perSource(c)) {
      const src = c.sources[0];
      bySrc.set(src, [...(bySrc.get(src) ?? []), shown(i, `${c.sensor}.${c.event}`)]);
    } else {
      other.push(shown(i, `${c.sensor}.${c.event}`));
    }
  }
  const out: Group[] = [...bySrc.entries()]
    .sort((a, b) => Number(a[0]) - Number(b[0]) || a[0].localeCompare(b[0]))
    .map(([src, series]) => ({ title: `node ${src}`, series }));
  if (other.length) out.push({ title: "machine-wide (not per node)", series: other });
  return out;
}

// ---------------------------------------------------------------- plots

interface PlotBox {
  group: Group;
  u: uPlot;
  card: HTMLElement;
}

let plots: PlotBox[] = [];
let signature = "";
let yShared: [number, number] | null = null;
let pctShared: [number, number] | null = null;
let internalScale = false;

function labelsPlugin(): uPlot.Plugin {
  return {
    hooks: {
      draw: [
        (u: uPlot) => {
          const ctx = u.ctx;
          const { left, top, width, height } = u.bbox;
          ctx.save();
          ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
          for (const m of app.store.marks) {
            if (m.mark !== "label" || m.t < app.xr.min || m.t > app.xr.max) continue;
            const x = Math.round(u.valToPos(m.t, "x", true));
            if (x < left || x > left + width) continue;
            ctx.strokeStyle = "#9333ea";
            ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
            ctx.fillStyle = "#6b21a8";
            ctx.fillText(m.text ?? "", x + 3 * devicePixelRatio, top + 12 * devicePixelRatio);
          }
          ctx.restore();
        },
      ],
    },
  };
}

function interactPlugin(): uPlot.Plugin {
  return {
    hooks: {
      ready: [
        (u: uPlot) => {
          const over = u.over;
          // Wheel: zoom around the cursor.
          over.addEventListener(
            "wheel",
            (e) => {
              e.preventDefault();
              const span = app.xr.max - app.xr.min;
              const at = u.posToVal(e.offsetX, "x");
              const k = e.deltaY > 0 ? 1.25 : 0.8;
              setWindow(at - (at - app.xr.min) * k, at + (app.xr.max - at) * k);
              void span;
            },
            { passive: false },
          );
          // Shift+drag (or middle button): pan.
          over.addEventListener(
            "mousedown",
            (e) => {
              if (!e.shiftKey && e.button !== 1) return;
              e.stopPropagation();
              e.preventDefault();
              const x0 = e.clientX,
                r0 = { ...app.xr },
                w = over.clientWidth;
              const move = (m: MouseEvent) => {
                const dt = ((m.clientX - x0) / w) * (r0.max - r0.min);
                setWindow(r0.min - dt, r0.max - dt);
              };
              const up = () => {
                window.removeEventListener("mousemove", move);
                window.removeEventListener("mouseup", up);
              };
              window.addEventListener("mousemove", move);
              window.addEventListener("mouseup", up);
            },
            { capture: true },
          );
          over.addEventListener("dblclick", () => followNow());
        },
      ],
      setSelect: [
        (u: uPlot) => {
          if (u.select.width < 3) return;
          const a = u.posToVal(u.select.left, "x"),
            b = u.posToVal(u.select.left + u.select.width, "x");
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          setWindow(a, b);
        },
      ],
      setSeries: [
        (u: uPlot, idx: number | null) => {
          if (internalScale || idx === null) return;
          const box = plots.find((p) => p.u === u);
          const s = box?.group.series[idx - 1];
          if (!s) return;
          if (u.series[idx].show) app.hidden.delete(s.key);
          else app.hidden.add(s.key);
          render();
        },
      ],
    },
  };
}

function buildPlots(gs: Group[]): void {
  for (const p of plots) {
    p.u.destroy();
    p.card.remove();
  }
  plots = [];
  const root = $("plots");
  root.replaceChildren();
  root.classList.toggle("multi", gs.length > 1);
  for (const g of gs) {
    const card = document.createElement("div");
    card.className = "card";
    card.dataset.group = g.title;
    const h = document.createElement("h3");
    h.textContent = g.title;
    card.appendChild(h);
    root.appendChild(card);
    const anyPct = g.series.some((s) => s.scale === "pct");
    const width = Math.max(300, card.clientWidth - 12);
    const height = gs.length > 1 ? 220 : 380;
    const opts: uPlot.Options = {
      width,
      height,
      plugins: [labelsPlugin(), interactPlugin()],
      cursor: { drag: { x: true, y: false, setScale: false }, sync: { key: "numascope" } },
      legend: { live: true },
      scales: {
        x: { time: false, range: () => [app.xr.min, app.xr.max] },
        y: {
          range: (_u, mn, mx) => yShared ?? (mn === null || mx === null || mn === mx ? [Math.min(0, mn ?? 0), (mx ?? 0) + 1] : uPlot.rangeNum(Math.min(0, mn), mx, 0.05, true)),
        },
        pct: { range: (_u, _mn, mx) => pctShared ?? [0, Math.max(100, mx ?? 100)] },
      },
      axes: [
        { label: "time (s)", values: (_u, vs) => vs.map((v) => fmt(v)) },
        { scale: "y", values: (_u, vs) => vs.map((v) => fmt(v)), size: 60 },
        ...(anyPct ? [{ scale: "pct", side: 1, grid: { show: false }, label: "% of max", values: (_u: uPlot, vs: number[]) => vs.map((v) => v + "%") }] : []),
      ],
      series: [
        { label: "t (s)", value: (_u, v) => (v === null ? "–" : v.toFixed(3)) },
        ...g.series.map((s) => ({
          label: s.label + (s.scale === "pct" ? " (%)" : s.col.unit ? ` (${s.col.unit}${s.col.kind === "counter" && s.col.unit !== "%" ? "/s" : ""})` : ""),
          stroke: color(`${s.col.sensor}.${s.col.event}`),
          width: 1,
          scale: s.scale,
          show: !app.hidden.has(s.key),
          value: (_u: uPlot, v: number | null) => fmt(v),
        })),
      ],
    };
    const empty: uPlot.AlignedData = [[], ...g.series.map(() => [])];
    const u = new uPlot(opts, empty, card);
    plots.push({ group: g, u, card });
  }
}

let rafPending = false;
function scheduleRender(): void {
  if (rafPending) return;
  rafPending = true;
  requestAnimationFrame(() => {
    rafPending = false;
    render();
  });
}

let lastTotalsAt = 0;

function render(): void {
  const s = app.store;
  const gs = groups();
  const sig = JSON.stringify([app.perNode, app.pct, gs.map((g) => [g.title, g.series.map((x) => x.key + x.scale)])]);
  if (sig !== signature) {
    signature = sig;
    buildPlots(gs);
  } else {
    plots.forEach((p, i) => (p.group = gs[i]));
  }
  $("empty").hidden = app.mode !== "none";
  if (app.follow) {
    if (app.mode === "live") {
      const end = s.n ? s.tMax : 0;
      app.xr = { min: end - app.windowS, max: end };
    } else {
      app.xr = app.mode === "view" ? { min: 0, max: app.duration } : { min: s.tMin, max: s.tMax };
    }
    if (app.xr.max <= app.xr.min) app.xr.max = app.xr.min + 1;
  }
  const datas = plots.map((p) => {
    const px = Math.max(100, p.u.bbox.width / devicePixelRatio);
    const d = decimate(s, p.group.series.map((x) => x.f), app.xr.min, app.xr.max, Math.round(px * 2));
    return [d.t, ...d.v] as uPlot.AlignedData;
  });
  // Small multiples share one y axis, so an imbalance shows at a glance.
  yShared = pctShared = null;
  if (plots.length > 1) {
    let mn = Infinity,
      mx = -Infinity,
      pmx = 100;
    plots.forEach((p, i) =>
      p.group.series.forEach((x, j) => {
        if (app.hidden.has(x.key)) return;
        for (const v of datas[i][j + 1] as (number | null)[]) {
          if (v === null) continue;
          if (x.scale === "pct") pmx = Math.max(pmx, v);
          else {
            mn = Math.min(mn, v);
            mx = Math.max(mx, v);
          }
        }
      }),
    );
    if (mn <= mx) yShared = mn === mx ? [Math.min(0, mn), mx + 1] : (uPlot.rangeNum(Math.min(0, mn), mx, 0.05, true) as [number, number]);
    pctShared = [0, pmx];
  }
  internalScale = true;
  plots.forEach((p, i) => p.u.setData(datas[i], true));
  internalScale = false;
  if (app.mode === "view") maybeFetch();
  const now = performance.now();
  if (app.mode !== "live" || now - lastTotalsAt > 1000) {
    lastTotalsAt = now;
    updateTotals(gs);
  }
  $("follow").classList.toggle("on", app.follow);
  setStatus(statusText());
}

function statusText(): string {
  const s = app.store;
  switch (app.mode) {
    case "live":
      return `${app.received} samples · ${s.cur.length} columns · interval ${fmt(app.state.interval_s)} s${app.state.paused ? " · paused" : ""}${app.state.recording ? " · recording " + app.state.recording : ""}`;
    case "view":
      return `${app.hello.samples} samples · ${s.cols.length} columns · ${fmt(app.duration)} s`;
    case "file":
      return `${s.n} samples · ${s.cols.length} columns · ${fmt(s.tMax - s.tMin)} s`;
  }
  return "";
}

function setWindow(a: number, b: number): void {
  if (!(b > a)) return;
  app.follow = false;
  app.xr = { min: a, max: b };
  render();
}

function followNow(): void {
  app.follow = true;
  render();
}

// ---------------------------------------------------------------- totals

/** sumOf adds columns idx sample by sample, as the summed view plots them ("%" averaged). */
function sumOf(idx: number[], unit: string): (k: number) => number {
  const s = app.store;
  const div = unit === "%" ? idx.length : 1;
  return (k) => {
    let sum = 0,
      any = false;
    for (const i of idx) {
      const x = s.v[i][k];
      if (!Number.isNaN(x)) {
        sum += x;
        any = true;
      }
    }
    return any ? sum / div : NaN;
  };
}

/**
 * updateTotals fills the totals table with what the plots show: in the
 * summed view one row per trace, so the per-node columns of a --discrete
 * recording appear as their sum over nodes; per node, one row per column.
 */
function updateTotals(gs: Group[]): void {
  const s = app.store;
  const seen = new Set<string>();
  const cols: { name: string; col: Column; f: (k: number) => number }[] = [];
  const sums: { name: string; columns: string[] }[] = [];
  for (const g of gs)
    for (const x of g.series) {
      if (x.sum) {
        if (seen.has(x.key)) continue;
        seen.add(x.key);
        cols.push({ name: x.key, col: x.col, f: sumOf(x.raw, x.col.unit) });
        sums.push({ name: x.key, columns: x.raw.map((i) => s.cols[i].name) });
        continue;
      }
      for (const i of x.raw) {
        const name = s.cols[i].name;
        if (seen.has(name)) continue;
        seen.add(name);
        cols.push({ name, col: s.cols[i], f: (k) => s.v[i][k] });
      }
    }
  let rows: Total[];
  if (app.mode === "view") {
    requestTotals(sums);
    const rt = app.remoteTotals;
    if (!rt) return;
    const byName = new Map([...rt.columns, ...(rt.sums ?? [])].map((c: any) => [c.name, c]));
    rows = cols.map(({ name, col }) => {
      const r: any = byName.get(name) ?? {};
      const node = col.sources.length === 1 && col.sources[0] !== "" ? col.sources[0] : "all";
      return { name, node, unit: col.unit, kind: col.kind, n: r.n ?? 0, count: r.count ?? null, mean: r.mean ?? null, max: r.max ?? null };
    });
  } else {
    rows = totals(s, cols, app.xr.min, app.xr.max);
  }
  app.lastTotals = rows;
  const tb = $("totals").querySelector("tbody")!;
  tb.replaceChildren();
  for (const r of rows) {
    const tr = document.createElement("tr");
    for (const v of [r.name, r.node, r.unit, String(r.n), fmt(r.count), fmt(r.mean), fmt(r.max)]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.appendChild(td);
    }
    tb.appendChild(tr);
  }
}

let totalsTimer = 0;
function requestTotals(sums: { name: string; columns: string[] }[]): void {
  const rt = app.remoteTotals;
  const key = JSON.stringify(sums);
  if (rt && rt.t0 === app.xr.min && rt.t1 === app.xr.max && rt.key === key) return;
  if (totalsWanted === `${app.xr.min} ${app.xr.max} ${key}`) return;
  totalsWanted = `${app.xr.min} ${app.xr.max} ${key}`;
  clearTimeout(totalsTimer);
  totalsTimer = window.setTimeout(() => {
    const id = ++app.reqID;
    totalsKeys.set(id, key);
    send({ type: "totals", id, t0: app.xr.min, t1: app.xr.max, ...(sums.length ? { sums } : {}) });
  }, 150);
}

let totalsWanted = "";
const totalsKeys = new Map<number, string>();

function exportCSV(): void {
  const csv = totalsCSV(app.lastTotals, app.xr.min, app.xr.max);
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([csv], { type: "text/csv" }));
  a.download = "numascope-totals.csv";
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

// ---------------------------------------------------------------- side panels

function renderLabels(): void {
  const ul = $("labels");
  ul.replaceChildren();
  for (const m of app.store.marks) {
    if (m.mark !== "label") continue;
    const li = document.createElement("li");
    li.textContent = `${m.t.toFixed(3)} s  ${m.text}`;
    li.dataset.t = String(m.t);
    li.onclick = () => {
      const half = (app.xr.max - app.xr.min) / 2;
      setWindow(m.t - half, m.t + half);
    };
    ul.appendChild(li);
  }
}

function cpuList(cpus: number[]): string {
  const out: string[] = [];
  for (let i = 0; i < cpus.length; ) {
    let j = i;
    while (j + 1 < cpus.length && cpus[j + 1] === cpus[j] + 1) j++;
    out.push(j > i ? `${cpus[i]}-${cpus[j]}` : `${cpus[i]}`);
    i = j + 1;
  }
  return out.join(",") || "none";
}

/** renderTopology draws the nodes and the distance heatmap; ids and values go in as text (they are the file's). */
function renderTopology(topo: any): void {
  const box = $("topology");
  if (!topo || !topo.nodes?.length) {
    box.textContent = "no topology in this data";
    return;
  }
  const gib = (b: number) => (b / 2 ** 30).toFixed(1);
  const row = (...cells: HTMLElement[]) => el("tr", {}, ...cells);
  // Rows in a tbody, as the HTML parser puts them.
  const nodes = el("tbody", {}, row(el("th", {}, "node"), el("th", {}, "CPUs"), el("th", {}, "memory GiB"), el("th", {}, "free")));
  for (const n of topo.nodes) {
    nodes.append(row(el("td", {}, String(n.id)), el("td", {}, cpuList(n.cpus ?? [])), el("td", {}, gib(n.memory_total_bytes ?? 0)), el("td", {}, gib(n.memory_free_bytes ?? 0))));
  }
  const heat = el("tbody", {}, row(el("th"), ...topo.nodes.map((n: any) => el("th", {}, String(n.id)))));
  const all = topo.nodes.flatMap((n: any) => Object.values(n.distances ?? {}) as number[]);
  const lo = Math.min(...all, 10),
    hi = Math.max(...all, 10);
  for (const a of topo.nodes) {
    const tr = row(el("th", {}, String(a.id)));
    for (const b of topo.nodes) {
      const d = a.distances?.[String(b.id)];
      const x = d === undefined || hi === lo ? 0 : (d - lo) / (hi - lo);
      const td = el("td", { title: `node ${a.id} → node ${b.id}: ${d ?? "?"}` }, String(d ?? "?"));
      td.style.background = `hsl(${Math.round(130 - 130 * x)} 70% ${Math.round(85 - 25 * x)}%)`;
      tr.append(td);
    }
    heat.append(tr);
  }
  box.replaceChildren(el("table", { class: "nodes" }, nodes), el("p", {}, "distances"), el("table", { class: "heat" }, heat));
}

/** renderPicker lists the events, grouped by sensor, with search. */
function renderPicker(): void {
  const root = $("events");
  const q = ($("search") as HTMLInputElement).value.trim().toLowerCase();
  root.replaceChildren();
  interface Ev {
    sensor: string;
    name: string;
    desc: string;
    unit: string;
    present: boolean;
    /** why the event cannot be counted here, and what to do (live catalog) */
    reason?: string;
    fix?: string;
  }
  const bySensor = new Map<string, Ev[]>();
  if (app.mode === "live") {
    for (const s of app.hello.catalog) {
      bySensor.set(
        s.name,
        s.events.map((e: any): Ev => {
          const ev: Ev = { sensor: s.name, name: e.name, desc: e.desc, unit: e.unit, present: s.present };
          if (e.unavailable) {
            ev.reason = e.reason || e.unavailable;
            ev.fix = e.fix || "";
            // Sensors prefix the description with the whole message; the
            // note below says it, so show the plain description.
            const pre = `UNAVAILABLE: ${e.unavailable} (`;
            if (ev.desc.startsWith(pre) && ev.desc.endsWith(")")) ev.desc = ev.desc.slice(pre.length, -1);
          }
          return ev;
        }),
      );
      if (!s.present) bySensor.set(s.name, [{ sensor: s.name, name: "(absent)", desc: s.reason ?? "", unit: "", present: false }]);
    }
  } else {
    for (const c of app.store.cols) {
      const list = bySensor.get(c.sensor) ?? [];
      if (!list.some((e) => e.name === c.event)) list.push({ sensor: c.sensor, name: c.event, desc: c.desc, unit: c.unit, present: true });
      bySensor.set(c.sensor, list);
    }
  }
  const enabled = new Set(activeColumns().map((i) => `${app.store.cols[i].sensor}.${app.store.cols[i].event}`));
  const hiddenEv = (key: string) => app.store.cols.filter((c) => `${c.sensor}.${c.event}` === key).every((c) => app.hidden.has(c.name) || app.hidden.has(key));
  for (const [sensor, evs] of bySensor) {
    const match = evs.filter((e) => !q || e.name.toLowerCase().includes(q) || e.desc.toLowerCase().includes(q) || sensor.includes(q));
    if (!match.length) continue;
    const det = document.createElement("details");
    det.open = true;
    det.append(el("summary", {}, sensor, " ", el("small", {}, `(${match.length})`)));
    for (const e of match) {
      const key = `${e.sensor}.${e.name}`;
      const lab = document.createElement("label");
      const unavailable = e.reason !== undefined;
      lab.className = "ev" + (e.present ? "" : " absent") + (unavailable ? " unavailable" : "");
      lab.title = unavailable ? `${key} is unavailable here: ${e.reason}${e.fix ? `\nfix: ${e.fix}` : ""}` : key;
      const cb = document.createElement("input");
      cb.type = "checkbox";
      cb.disabled = !e.present || unavailable;
      cb.dataset.event = key;
      cb.checked = app.mode === "live" ? enabled.has(key) : !hiddenEv(key);
      cb.onchange = () => toggleEvent(key, cb.checked);
      const mn = document.createElement("span");
      mn.className = "mn";
      mn.textContent = e.name + (e.unit ? `  [${e.unit}]` : "");
      const desc = document.createElement("span");
      desc.className = "desc";
      desc.textContent = e.desc;
      lab.append(cb, mn, desc);
      if (unavailable) {
        const why = document.createElement("span");
        why.className = "why";
        why.textContent = `unavailable: ${e.reason}`;
        lab.append(why);
      }
      det.appendChild(lab);
    }
    root.appendChild(det);
  }
}

function toggleEvent(key: string, on: boolean): void {
  if (app.mode === "live") {
    const s = app.store;
    const cur = [...new Set(s.cur.map((i) => `${s.cols[i].sensor}.${s.cols[i].event}`))];
    const next = on ? [...cur, key] : cur.filter((k) => k !== key);
    if (!next.length) {
      showError("keep at least one event enabled");
      renderPicker();
      return;
    }
    send({ type: "events", events: next });
    return;
  }
  for (const c of app.store.cols) if (`${c.sensor}.${c.event}` === key) on ? app.hidden.delete(c.name) : app.hidden.add(c.name);
  on ? app.hidden.delete(key) : app.hidden.add(key);
  signature = "";
  render();
}

// ---------------------------------------------------------------- server

function send(msg: any): void {
  if (app.ws?.readyState === WebSocket.OPEN) app.ws.send(JSON.stringify(msg));
}

function connect(): void {
  if (location.protocol !== "http:" && location.protocol !== "https:") return;
  const token = new URLSearchParams(location.search).get("token");
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws${token ? "?token=" + encodeURIComponent(token) : ""}`;
  const ws = new WebSocket(url);
  app.ws = ws;
  ws.onmessage = (e) => {
    let m: any;
    try {
      m = JSON.parse(e.data);
    } catch {
      showError("the server sent a message that is not JSON");
      return;
    }
    onMessage(m);
  };
  ws.onclose = (e) => {
    if (app.ws !== ws) return;
    app.ws = null;
    profileDisconnected(e.reason);
    setStatus(`disconnected${e.reason ? ": " + e.reason : ""}`);
    if (app.mode === "live" || app.mode === "view") showError(`connection closed${e.reason ? ": " + e.reason : ""}; reload to reconnect`);
  };
}

function onMessage(m: any): void {
  if (profileMessage(m)) return;
  switch (m.type) {
    case "hello":
      if (m.protocol !== 1) showError(`this client speaks protocol 1, the server ${m.protocol}: reload the page`);
      if (m.mode === "experiment") {
        showReport(m.experiment, m.file ?? "");
        break;
      }
      if (m.mode === "profile") {
        const send = (msg: any) => app.ws?.readyState === WebSocket.OPEN && (app.ws.send(JSON.stringify(msg)), true);
        showProfile(m.profile, m.file ?? "", { file: m.file ?? "", hints: m.hints ?? [], sourcePath: m.source_path ?? [], fetch: serverSource(send) });
        break;
      }
      document.body.classList.remove("report", "profile");
      app.hello = m;
      app.mode = m.mode;
      document.body.classList.toggle("live", m.mode === "live");
      $("mode").textContent = m.mode === "live" ? "live" : `recording ${m.file ?? ""}`;
      $("host").textContent = [m.host, m.kernel].filter(Boolean).join(" · ");
      app.store = new Store();
      app.store.setColumns(m.columns);
      app.follow = true;
      app.hidden.clear();
      signature = "";
      if (m.mode === "live") {
        applyState(m.state);
      } else {
        app.duration = m.duration_s ?? 0;
        app.remoteTotals = null;
        totalsWanted = "";
        app.store.marks = (m.marks ?? []).map((x: any) => ({ mark: x.mark, t: x.t, text: x.text, interval_s: x.interval_s }));
        app.fetched = null;
        if (m.skipped?.length) showError(`${m.skipped.length} problems reading the file: ${m.skipped[0]}`);
      }
      renderTopology(m.topology);
      renderPicker();
      renderLabels();
      render();
      break;
    case "batch":
      for (const row of m.samples) app.store.append(row);
      app.received += m.samples.length;
      scheduleRender();
      break;
    case "columns":
      app.store.setColumns(m.columns);
      app.store.marks.push({ mark: "columns", t: m.t });
      applyState(m.state);
      renderPicker();
      scheduleRender();
      break;
    case "mark":
      app.store.marks.push(m as Mark);
      if (m.mark === "label") renderLabels();
      scheduleRender();
      break;
    case "state":
      applyState(m.state);
      break;
    case "range":
      onRange(m);
      break;
    case "totals":
      app.remoteTotals = { ...m, key: totalsKeys.get(m.id) ?? "" };
      totalsKeys.delete(m.id);
      updateTotals(groups());
      break;
    case "error":
      showError(m.error);
      break;
    case "ok":
      showError("");
      break;
  }
}

function applyState(st: State): void {
  app.state = st;
  ($("interval") as HTMLInputElement).value = fmtInterval(st.interval_s);
  $("pause").textContent = st.paused ? "resume" : "pause";
  $("pause").classList.toggle("on", st.paused);
  $("record").textContent = st.recording ? "stop recording" : "record";
  $("record").classList.toggle("on", !!st.recording);
  if (app.mode === "live") {
    app.perNode = st.discrete;
    ($(st.discrete ? "view-pernode" : "view-summed") as HTMLInputElement).checked = true;
  }
  setStatus(statusText());
}

function fmtInterval(s: number): string {
  if (s >= 1) return `${+s.toFixed(3)}s`;
  if (s >= 1e-3) return `${+(s * 1e3).toFixed(3)}ms`;
  return `${+(s * 1e6).toFixed(0)}us`;
}

// View mode: fetch min/max-decimated data for the window, with a window's
// margin either side so that panning shows data at once. A reply is good
// while the window stays inside it and its buckets are at most a pixel wide.
function maybeFetch(): void {
  const px = Math.max(200, (plots[0]?.u.bbox.width ?? 1000) / devicePixelRatio);
  const span = app.xr.max - app.xr.min;
  const f = app.fetched;
  const good = f && app.xr.min >= f.t0 && app.xr.max <= f.t1 && f.res <= (span / px) * 1.01;
  if (good || app.pending) return;
  const t0 = app.xr.min - span,
    t1 = app.xr.max + span;
  const points = Math.min(20000, Math.round(px * 2 * 3));
  app.pending = { t0, t1 };
  send({ type: "range", id: ++app.reqID, t0, t1, points });
}

function onRange(m: any): void {
  const req = app.pending ?? { t0: m.t0, t1: m.t1 };
  app.pending = null;
  const s = new Store(Infinity);
  s.setColumns(app.hello.columns);
  for (const row of m.samples) s.append(row);
  s.marks = app.store.marks;
  app.store = s;
  // Undecimated replies hold every sample of the range: resolution 0.
  const res = m.decimated ? (req.t1 - req.t0) / Math.max(1, m.samples.length / 2) : 0;
  app.fetched = { t0: req.t0, t1: req.t1, res };
  render();
}

// ---------------------------------------------------------------- files

/** showReport switches to the experiment page. */
function showReport(x: Experiment, file: string): void {
  app.mode = "experiment";
  app.report = x;
  document.body.classList.remove("live", "profile");
  document.body.classList.add("report");
  $("mode").textContent = `experiment ${x.analysis?.name ?? ""}`;
  $("host").textContent = "";
  renderReport($("report"), x, file);
  setStatus(`${x.analysis?.measured ?? 0} runs · ${(x.analysis?.responses ?? []).length} responses`);
}

/** showProfile switches to the profile pages (src/profile.ts). */
function showProfile(p: any, file: string, o: ProfileOptions): void {
  app.mode = "profile";
  document.body.classList.remove("live", "report");
  document.body.classList.add("profile");
  $("mode").textContent = `profile ${file}`;
  $("host").textContent = "";
  let root = document.getElementById("profile");
  if (!root) {
    root = document.createElement("section");
    root.id = "profile";
    root.setAttribute("aria-label", "profile");
    document.body.insertBefore(root, $("drop"));
  }
  renderProfile(root, p, o);
  setStatus(`${(p.locations ?? []).length} locations · ${(p.threads ?? []).length} threads · ${fmt(p.duration_s ?? 0)} s`);
}

/** experimentIn recognises an experiment report among files dropped or picked. */
function experimentIn(buf: ArrayBuffer): Experiment | null {
  const b = new Uint8Array(buf, 0, Math.min(buf.byteLength, 64));
  const head = new TextDecoder().decode(b).trimStart();
  // A recording's first line is its header; a report is one (indented) JSON object.
  if (!head.startsWith("{") || /^\{\s*"type"\s*:\s*"header"/.test(head)) return null;
  try {
    return asExperiment(JSON.parse(new TextDecoder().decode(buf)));
  } catch {
    return null;
  }
}

function disconnect(): void {
  if (app.ws) {
    const ws = app.ws;
    app.ws = null;
    ws.close();
  }
}

async function loadFile(file: File): Promise<void> {
  showError("");
  setStatus(`reading ${file.name}…`);
  try {
    const buf = await file.arrayBuffer();
    const x = experimentIn(buf);
    if (x) {
      disconnect();
      showReport(x, file.name);
      return;
    }
    const pr = profileIn(buf);
    if (pr) {
      disconnect();
      showProfile(pr, file.name, { file: file.name });
      return;
    }
    const rec = await parseFile(file.name, buf);
    disconnect();
    app.mode = "file";
    document.body.classList.remove("live", "report", "profile");
    app.hello = { ...rec.header, catalog: undefined, sensors: rec.header.sensors, file: file.name };
    app.store = rec.store;
    app.follow = true;
    app.hidden.clear();
    signature = "";
    $("mode").textContent = `file ${file.name}${rec.legacy ? " (NUMAscope format)" : ""}`;
    $("host").textContent = [rec.header.host, rec.header.kernel].filter(Boolean).join(" · ");
    if (rec.skipped.length) showError(`${rec.skipped.length} problems reading ${file.name}: ${rec.skipped[0]}`);
    renderTopology(rec.header.topology);
    renderPicker();
    renderLabels();
    render();
  } catch (e: any) {
    showError(`${file.name}: ${e.message ?? e}`);
    setStatus("");
  }
}

// ---------------------------------------------------------------- wiring

function wire(): void {
  const val = (id: string) => ($(id) as HTMLInputElement).value.trim();
  $("interval-set").onclick = () => send({ type: "interval", interval: val("interval") });
  $("interval").onkeydown = (e) => e.key === "Enter" && $("interval-set").click();
  $("pause").onclick = () => send({ type: app.state.paused ? "resume" : "pause" });
  $("label-add").onclick = () => {
    const text = val("label-text");
    if (!text) return showError("type the label's text first");
    send({ type: "label", text });
    ($("label-text") as HTMLInputElement).value = "";
  };
  $("label-text").onkeydown = (e) => e.key === "Enter" && $("label-add").click();
  $("record").onclick = () => (app.state.recording ? send({ type: "record_stop" }) : send({ type: "record", path: val("record-path") || undefined }));
  for (const id of ["view-summed", "view-pernode"]) {
    $(id).onchange = () => {
      const per = ($("view-pernode") as HTMLInputElement).checked;
      if (app.mode === "live") {
        send({ type: "discrete", discrete: per });
      } else {
        app.perNode = per;
        render();
      }
    };
  }
  $("pct").onchange = () => {
    app.pct = ($("pct") as HTMLInputElement).checked;
    render();
  };
  $("window").onchange = () => {
    const w = Number(val("window"));
    if (!(w > 0)) return showError("the window is a number of seconds > 0");
    app.windowS = w;
    if (app.mode === "live") app.follow = true;
    render();
  };
  $("follow").onclick = () => followNow();
  $("load").onclick = () => $("file").click();
  $("file").onchange = () => {
    const f = ($("file") as HTMLInputElement).files?.[0];
    if (f) void loadFile(f);
  };
  $("search").oninput = () => renderPicker();
  $("csv").onclick = (e) => {
    e.preventDefault();
    exportCSV();
  };
  let depth = 0;
  document.addEventListener("dragenter", (e) => {
    e.preventDefault();
    depth++;
    $("drop").hidden = false;
  });
  document.addEventListener("dragleave", () => {
    if (--depth <= 0) $("drop").hidden = true;
  });
  document.addEventListener("dragover", (e) => e.preventDefault());
  document.addEventListener("drop", (e) => {
    e.preventDefault();
    depth = 0;
    $("drop").hidden = true;
    const f = e.dataTransfer?.files?.[0];
    if (f) void loadFile(f);
  });
  new ResizeObserver(() => {
    for (const p of plots) p.u.setSize({ width: Math.max(300, p.card.clientWidth - 12), height: p.u.height });
    scheduleRender();
  }).observe($("plots"));
}

// For tests and benchmarks: read-only access to the data and a way to pan.
(window as any).__numascope = {
  app,
  setWindow,
  columns: () => app.store.cols.map((c) => c.name),
  visible: () => plots.map((p) => ({ group: p.group.title, series: p.u.series.slice(1).map((s) => ({ label: s.label, show: s.show })) })),
  rows: () => app.store.n,
};

wire();
connect();
render();
