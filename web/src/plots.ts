// The time-series plots (uPlot): one card per group of src/series.ts, small
// multiples sharing one y axis, label marks drawn as dashed lines, and the
// interactions (wheel zoom, drag to select, shift+drag pan, double click to
// follow, legend clicks to hide a series) handed back through PlotActions.

import uPlot from "uplot";
import { $ } from "./dom";
import { si } from "./format";
import { app } from "./state";
import { eventKey, type Group } from "./series";

/** What the plots ask of the rest of the client. */
export interface PlotActions {
  /** show [a, b] and stop following */
  setWindow(a: number, b: number): void;
  /** follow the newest data again */
  follow(): void;
  /** a series was switched on or off in a legend (app.hidden says which) */
  toggled(): void;
}

/** The colours of series, in turn (the bench page's curves use them too). */
export const palette = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#ea580c", "#4f46e5", "#0d9488", "#be123c"];

/** color is an event's colour, the same in every small multiple: events in column order get the palette in turn. */
function color(event: string): string {
  const colors = app.plots.colors;
  let c = colors.get(event);
  if (!c) {
    c = palette[colors.size % palette.length];
    colors.set(event, c);
  }
  return c;
}

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
              act.setWindow(at - (at - app.xr.min) * k, at + (app.xr.max - at) * k);
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
          if (app.plots.internalScale || idx === null) return;
          const box = app.plots.boxes.find((p) => p.u === u);
          const s = box?.group.series[idx - 1];
          if (!s) return;
          if (u.series[idx].show) app.hidden.delete(s.key);
          else app.hidden.add(s.key);
          act.toggled();
        },
      ],
    },
  };
}

/** unitLabel is what a series' legend says of its unit: "(%)", "(pages/s)" for a counter... */
function unitLabel(s: Group["series"][number]): string {
  if (s.scale === "pct") return " (%)";
  if (!s.col.unit) return "";
  return ` (${s.col.unit}${s.col.kind === "counter" && s.col.unit !== "%" ? "/s" : ""})`;
}

/** buildPlots replaces the plots with one card per group. */
export function buildPlots(gs: Group[], act: PlotActions): void {
  const P = app.plots;
  for (const p of P.boxes) {
    p.u.destroy();
    p.card.remove();
  }
  P.boxes = [];
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
      plugins: [labelsPlugin(), interactPlugin(act)],
      cursor: { drag: { x: true, y: false, setScale: false }, sync: { key: "numascope" } },
      legend: { live: true },
      scales: {
        x: { time: false, range: () => [app.xr.min, app.xr.max] },
        y: {
          range: (_u, mn, mx) => P.yShared ?? (mn === null || mx === null || mn === mx ? [Math.min(0, mn ?? 0), (mx ?? 0) + 1] : uPlot.rangeNum(Math.min(0, mn), mx, 0.05, true)),
        },
        pct: { range: (_u, _mn, mx) => P.pctShared ?? [0, Math.max(100, mx ?? 100)] },
      },
      axes: [
        { label: "time (s)", values: (_u, vs) => vs.map((v) => si(v)) },
        { scale: "y", values: (_u, vs) => vs.map((v) => si(v)), size: 60 },
        ...(anyPct ? [{ scale: "pct", side: 1, grid: { show: false }, label: "% of max", values: (_u: uPlot, vs: number[]) => vs.map((v) => v + "%") }] : []),
      ],
      series: [
        { label: "t (s)", value: (_u, v) => (v === null ? "–" : v.toFixed(3)) },
        ...g.series.map((s) => ({
          label: s.label + unitLabel(s),
          stroke: color(eventKey(s.col)),
          width: 1,
          scale: s.scale,
          show: !app.hidden.has(s.key),
          value: (_u: uPlot, v: number | null) => si(v),
        })),
      ],
    };
    const empty: uPlot.AlignedData = [[], ...g.series.map(() => [])];
    const u = new uPlot(opts, empty, card);
    P.boxes.push({ group: g, u, card });
  }
}

/** setPlotData gives each plot its data (one entry per plot, in order); small multiples share their y ranges. */
export function setPlotData(datas: uPlot.AlignedData[]): void {
  const P = app.plots;
  P.yShared = P.pctShared = null;
  if (P.boxes.length > 1) {
    let mn = Infinity,
      mx = -Infinity,
      pmx = 100;
    P.boxes.forEach((p, i) =>
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
    if (mn <= mx) P.yShared = mn === mx ? [Math.min(0, mn), mx + 1] : (uPlot.rangeNum(Math.min(0, mn), mx, 0.05, true) as [number, number]);
    P.pctShared = [0, pmx];
  }
  P.internalScale = true;
  P.boxes.forEach((p, i) => p.u.setData(datas[i], true));
  P.internalScale = false;
}

/** plotWidth is the drawing width of the first plot in CSS pixels, or dflt when there is none. */
export function plotWidth(dflt: number): number {
  return (app.plots.boxes[0]?.u.bbox.width ?? dflt) / devicePixelRatio;
}

/** resizePlots fits the plots to their cards' widths. */
export function resizePlots(): void {
  for (const p of app.plots.boxes) p.u.setSize({ width: Math.max(300, p.card.clientWidth - 12), height: p.u.height });
}
