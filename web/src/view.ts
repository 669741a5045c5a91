// Drawing the time-series view: render() brings the plots, the totals table
// and the status up to date with the samples' state (src/samples.ts; at most
// once a frame through scheduleRender), and the window and how the samples
// are shown are changed here (setWindow, followNow, setWindowLength,
// setPerNode, setPct).

import type uPlot from "uplot";
import { decimate } from "./data";
import { $ } from "./dom";
import { si } from "./format";
import { setStatus } from "./notice";
import { mode } from "./page";
import { plotBoxes, setPlotData, showGroups, type PlotActions } from "./plots";
import { maybeFetch } from "./range";
import { samples } from "./samples";
import { activeColumns, groups, hasMax } from "./series";
import { updateTotals } from "./totals";

const actions: PlotActions = { setWindow, follow: followNow, toggled: render };

/** a render is asked for at the next frame */
let rafPending = false;
/** when the totals were last updated (live updates them at most once a second) */
let totalsAt = 0;

/** render draws the view as the samples' state says; the plots are rebuilt only when what they show changed. */
export function render(): void {
  const S = samples;
  const s = S.store;
  const gs = groups();
  showGroups(gs, JSON.stringify([S.perNode, S.pct, gs.map((g) => [g.title, g.unit, g.series.map((x) => [x.key, x.scale, x.color])])]), actions);
  const m = mode();
  $("empty").hidden = m !== "none";
  // "% of max" only where an event shown has a known maximum (and is not a percentage already).
  $("pct-box").hidden = !activeColumns().some((i) => hasMax(s.cols[i]));
  if (S.follow) {
    if (m === "live") {
      const end = s.n ? s.tMax : 0;
      S.xr = { min: end - S.windowS, max: end };
    } else {
      S.xr = m === "view" ? { min: 0, max: S.duration } : { min: s.tMin, max: s.tMax };
    }
    if (S.xr.max <= S.xr.min) S.xr.max = S.xr.min + 1;
  }
  setPlotData(
    plotBoxes().map((p) => {
      const px = Math.max(100, p.u.bbox.width / devicePixelRatio);
      const d = decimate(s, p.group.series.map((x) => x.f), S.xr.min, S.xr.max, Math.round(px * 2));
      return [d.t, ...d.v] as uPlot.AlignedData;
    }),
  );
  if (m === "view") maybeFetch();
  const now = performance.now();
  if (m !== "live" || now - totalsAt > 1000) {
    totalsAt = now;
    updateTotals(gs);
  }
  $("follow").classList.toggle("on", S.follow);
  setStatus(statusText());
}

/** scheduleRender renders at the next frame (once, however often it is called before). */
export function scheduleRender(): void {
  if (rafPending) return;
  rafPending = true;
  requestAnimationFrame(() => {
    rafPending = false;
    render();
  });
}

/** statusText says what is shown: samples, columns, interval or duration. */
export function statusText(): string {
  const S = samples;
  const s = S.store;
  switch (mode()) {
    case "live":
      return `${S.received} samples · ${s.cur.length} columns · interval ${si(S.session.interval_s)} s${S.session.paused ? " · paused" : ""}${S.session.recording ? " · recording " + S.session.recording : ""}`;
    case "view":
      return `${S.hello?.samples} samples · ${s.cols.length} columns · ${si(S.duration)} s`;
    case "file":
      return `${s.n} samples · ${s.cols.length} columns · ${si(s.tMax - s.tMin)} s`;
  }
  return "";
}

/** setWindow shows [a, b] and stops following. */
export function setWindow(a: number, b: number): void {
  if (!(b > a)) return;
  samples.follow = false;
  samples.xr = { min: a, max: b };
  render();
}

/** followNow follows the newest data (live) or the whole recording again. */
export function followNow(): void {
  samples.follow = true;
  render();
}

/** setWindowLength shows the last w seconds (live: following them again). */
export function setWindowLength(w: number): void {
  samples.windowS = w;
  if (mode() === "live") samples.follow = true;
  render();
}

/** setPerNode plots per node (true) or summed over nodes, for a recording or a file (live asks the server: "discrete"). */
export function setPerNode(per: boolean): void {
  samples.perNode = per;
  render();
}

/** setPct plots the events with a known maximum as % of it. */
export function setPct(on: boolean): void {
  samples.pct = on;
  render();
}
