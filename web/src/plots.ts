// The time-series plots (uPlot): one card per group of src/series.ts (one
// unit each), small multiples sharing the time axis and a synced cursor, the
// plots of one unit sharing their y range, label marks drawn as dashed lines,
// and the interactions (wheel zoom, drag to select, shift+drag pan, double
// click to follow, legend clicks to hide a series) handed back through
// PlotActions. The plots drawn, and what they were built for, are this
// module's own state.

import uPlot from "uplot";
import { $ } from "./dom";
import { samples } from "./samples";
import type { Group, PlotBox } from "./types";

/** The plots drawn, what they were built for (they are rebuilt when it changes), the y range the small multiples of each unit share, and whether the client itself is updating them (not the user toggling a series). */
const P = {
  boxes: [] as PlotBox[],
  signature: "",
  yShared: new Map<string, [number, number]>(),
  internalScale: false,
};

/** What the plots ask of the rest of the client. */
export interface PlotActions {
  /** show [a, b] and stop following */
  setWindow(a: number, b: number): void;
  /** follow the newest data again */
  follow(): void;
  /** a series was switched on or off in a legend (samples.hidden says which) */
  toggled(): void;
}

/** The colours of series, in turn (the bench and hosts pages' curves use them too). */
export { palette } from "./colors";

function labelsPlugin(): uPlot.Plugin {
  return {
    hooks: {
      draw: [
        (u: uPlot) => {
          const ctx = u.ctx;
          const { left, top, width, height } = u.bbox;
          ctx.save();
          ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
          const xr = samples.xr;
          for (const m of samples.store.marks) {
            if (m.mark !== "label" || m.t < xr.min || m.t > xr.max) continue;
            const x = Math.round(u.valToPos(m.t, "x", true));
            if (x < left || x > left + width) continue;
            ctx.strokeStyle = "#9333ea";
            ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
            ctx.beginPath();
            ctx.moveTo(x, top);
            ctx.lineTo(x, top + height);
            ctx.stroke();
            ctx.fillStyle = "#6b21a8";
            // Right of the line, or left of it where the text would run past the plot's edge.
            const text = m.text ?? "";
            const w = ctx.measureText(text).width;
            const gap = 3 * devicePixelRatio;
            const tx = x + gap + w > left + width ? Math.max(left, x - gap - w) : x + gap;
            ctx.fillText(text, tx, top + 12 * devicePixelRatio);
          }
          ctx.restore();
        },
      ],
    },
  };
}

function interactPlugin(act: PlotActions): uPlot.Plugin {
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
              const at = u.posToVal(e.offsetX, "x");
              const k = e.deltaY > 0 ? 1.25 : 0.8;
              act.setWindow(at - (at - samples.xr.min) * k, at + (samples.xr.max - at) * k);
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
                r0 = { ...samples.xr },
                w = over.clientWidth;
              const move = (m: MouseEvent) => {
                const dt = ((m.clientX - x0) / w) * (r0.max - r0.min);
                act.setWindow(r0.min - dt, r0.max - dt);
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
          over.addEventListener("dblclick", () => act.follow());
        },
      ],
      setSelect: [
        (u: uPlot) => {
          if (u.select.width < 3) return;
          const a = u.posToVal(u.select.left, "x"),
            b = u.posToVal(u.select.left + u.select.width, "x");
          u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
          act.setWindow(a, b);
        },
      ],
      setSeries: [
        (u: uPlot, idx: number | null) => {
          if (P.internalScale || idx === null) return;
          const box = P.boxes.find((p) => p.u === u);
          const s = box?.group.series[idx - 1];
          if (!s) return;
          if (u.series[idx].show) samples.hidden.delete(s.key);
          else samples.hidden.add(s.key);
          act.toggled();
        },
      ],
    },
  };
}

/** The binary prefixes of byte values. */
const binary = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];

/**
 * valueFormat formats a y value of a plot in unit with a prefix: bytes in binary prefixes
 * ("5.5 GiB", "12 MiB/s"; KiB as bytes), rates with SI prefixes and "/s" ("35k/s"),
 * percentages with "%".
 */
export function valueFormat(unit: string): (v: number | null) => string {
  const rate = unit.endsWith("/s");
  const base = rate ? unit.slice(0, -2) : unit;
  if (base === "bytes" || base === "KiB") {
    const mul = base === "KiB" ? 1024 : 1;
    return (v) => {
      if (v === null || Number.isNaN(v)) return "–";
      let x = v * mul,
        i = 0;
      while (Math.abs(x) >= 1024 && i < binary.length - 1) {
        x /= 1024;
        i++;
      }
      const digits = x === Math.trunc(x) || Math.abs(x) >= 100 ? 0 : Math.abs(x) >= 10 ? 1 : 2;
      return `${+x.toFixed(digits)} ${binary[i]}B${rate ? "/s" : ""}`;
    };
  }
  if (unit === "%" || unit === "% of max") return (v) => (v === null || Number.isNaN(v) ? "–" : `${short(v)}%`);
  return (v) => (v === null || Number.isNaN(v) ? "–" : short(v) + (rate ? "/s" : ""));
}

/** short formats v with an SI prefix and at most three significant digits, without trailing zeros: 35.2k, 200k, 50, 0.25. */
function short(v: number): string {
  const a = Math.abs(v);
  for (const [d, p] of [
    [1e12, "T"],
    [1e9, "G"],
    [1e6, "M"],
    [1e3, "k"],
  ] as const)
    if (a >= d) return `${+(v / d).toPrecision(3)}${p}`;
  return a >= 100 ? v.toFixed(0) : String(+v.toPrecision(3));
}

/** byteIncrs are the y tick steps of byte plots: 1, 2, 5, 10, 20, 50... of each binary prefix, so ticks read 2 GiB, not 1.86 GiB. */
const byteIncrs = binary.flatMap((_, k) => [1, 2, 5, 10, 20, 50, 100, 200, 500].map((m) => m * 1024 ** k));

/** uPlot's computed size of an axis (not in its type declarations). */
interface SizedAxis {
  _size?: number;
}

/** axisSize fits an axis to its widest tick label, so that no label is clipped. */
function axisSize(u: uPlot, values: string[] | null, ai: number, cycle: number): number {
  const ax = u.axes[ai];
  if (cycle > 1) return (ax as SizedAxis)._size ?? 50;
  let w = 0;
  if (values?.length) {
    u.ctx.save();
    u.ctx.font = ax.font?.[0] ?? `${12 * devicePixelRatio}px system-ui, sans-serif`;
    for (const v of values) w = Math.max(w, u.ctx.measureText(v).width / devicePixelRatio);
    u.ctx.restore();
  }
  return Math.ceil(w + (ax.ticks?.size ?? 10) + (ax.gap ?? 5) + 4);
}

/**
 * showGroups draws gs: it rebuilds the plots when what they show (signature) changed since they
 * were built, else hands the plots their groups' new series (the same keys, scales and colours).
 */
export function showGroups(gs: Group[], signature: string, act: PlotActions): void {
  if (signature !== P.signature) {
    P.signature = signature;
    buildPlots(gs, act);
  } else {
    P.boxes.forEach((p, i) => (p.group = gs[i]));
  }
}

/** rebuildPlots has the next showGroups build the plots anew (another recording, or a series switched on or off from the picker). */
export function rebuildPlots(): void {
  P.signature = "";
}

/** plotBoxes are the plots drawn, in order. */
export function plotBoxes(): readonly PlotBox[] {
  return P.boxes;
}

/** buildPlots replaces the plots with one card per group. */
function buildPlots(gs: Group[], act: PlotActions): void {
  for (const p of P.boxes) {
    p.u.destroy();
    p.card.remove();
  }
  P.boxes = [];
  const root = $("plots");
  root.replaceChildren();
  const places = new Set(gs.map((g) => g.title)).size;
  root.classList.toggle("multi", places > 1);
  // Per node: a row per unit, a column per node.
  root.dataset.places = String(places);
  setColumns(root);
  for (const g of gs) {
    const card = document.createElement("div");
    card.className = "card";
    card.dataset.group = g.title;
    card.dataset.unit = g.unit;
    // Summed, the y axis says the unit; per node, the title says whose plot it is.
    if (samples.perNode) {
      const h = document.createElement("h3");
      h.textContent = `${g.title} · ${g.unit}`;
      card.appendChild(h);
    }
    root.appendChild(card);
    // The small multiples share the time axis: only the last plot names it.
    const last = g === gs[gs.length - 1];
    const fmt = valueFormat(g.unit);
    const bytes = /^(bytes|KiB)(\/s)?$/.test(g.unit);
    const width = Math.max(300, card.clientWidth - 12);
    const height = places > 1 ? 180 : gs.length > 2 ? 150 : gs.length > 1 ? 220 : 380;
    const opts: uPlot.Options = {
      width,
      height,
      plugins: [labelsPlugin(), interactPlugin(act)],
      cursor: { drag: { x: true, y: false, setScale: false }, sync: { key: "numascope" } },
      legend: { live: true },
      scales: {
        x: { time: false, range: () => [samples.xr.min, samples.xr.max] },
        y: {
          range: (_u, mn, mx) => P.yShared.get(g.unit) ?? (mn === null || mx === null || mn === mx ? [Math.min(0, mn ?? 0), (mx ?? 0) + 1] : uPlot.rangeNum(Math.min(0, mn), mx, 0.05, true)),
        },
      },
      axes: [
        { ...(last || places > 1 ? { label: "time (s)" } : {}), values: (_u, vs) => vs.map((v) => short(v)) },
        { scale: "y", label: g.unit, values: (_u, vs) => vs.map((v) => fmt(v)), size: axisSize, ...(bytes ? { incrs: byteIncrs } : {}) },
      ],
      series: [
        { label: "t (s)", value: (_u, v) => (v === null ? "–" : v.toFixed(3)) },
        ...g.series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 1.5,
          scale: "y",
          show: !samples.hidden.has(s.key),
          value: (_u: uPlot, v: number | null) => fmt(v),
        })),
      ],
    };
    const empty: uPlot.AlignedData = [[], ...g.series.map(() => [])];
    const u = new uPlot(opts, empty, card);
    P.boxes.push({ group: g, u, card });
  }
}

/** setPlotData gives each plot its data (one entry per plot, in order); the plots of one unit share their y range. */
export function setPlotData(datas: uPlot.AlignedData[]): void {
  P.yShared = new Map();
  const lim = new Map<string, [number, number]>();
  P.boxes.forEach((p, i) =>
    p.group.series.forEach((x, j) => {
      if (samples.hidden.has(x.key)) return;
      const r = lim.get(p.group.unit) ?? [Infinity, -Infinity];
      for (const v of datas[i][j + 1] as (number | null)[]) {
        if (v === null || Number.isNaN(v)) continue;
        r[0] = Math.min(r[0], v);
        r[1] = Math.max(r[1], v);
      }
      lim.set(p.group.unit, r);
    }),
  );
  if (P.boxes.length > 1)
    for (const [unit, [mn, mx]] of lim) {
      if (mn > mx) continue;
      let r: [number, number] = mn === mx ? [Math.min(0, mn), mx + 1] : (uPlot.rangeNum(Math.min(0, mn), mx, 0.05, true) as [number, number]);
      if (unit === "%" || unit === "% of max") r = [Math.min(0, r[0]), Math.max(100, mx)];
      P.yShared.set(unit, r);
    }
  P.internalScale = true;
  P.boxes.forEach((p, i) => p.u.setData(datas[i], true));
  P.internalScale = false;
}

/** plotWidth is the drawing width of the first plot in CSS pixels, or dflt when there is none. */
export function plotWidth(dflt: number): number {
  return (P.boxes[0]?.u.bbox.width ?? dflt) / devicePixelRatio;
}

/** setColumns puts as many plots side by side as places (nodes) fit, each at least 340 px wide. */
function setColumns(root: HTMLElement): void {
  const places = Number(root.dataset.places ?? "1");
  root.style.setProperty("--columns", String(Math.max(1, Math.min(places, Math.floor(root.clientWidth / 340)))));
}

/** resizePlots fits the plots to their cards' widths. */
export function resizePlots(): void {
  setColumns($("plots"));
  for (const p of P.boxes) p.u.setSize({ width: Math.max(300, p.card.clientWidth - 12), height: p.u.height });
}
