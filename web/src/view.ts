// Drawing the time-series view: render() brings the plots, the totals table
// and the status up to date with app (at most once a frame through
// scheduleRender), and the window is moved with setWindow and followNow.

import type uPlot from "uplot";
import { decimate } from "./data";
import { $ } from "./dom";
import { si } from "./format";
import { setStatus } from "./notice";
import { buildPlots, setPlotData, type PlotActions } from "./plots";
import { maybeFetch } from "./range";
import { activeColumns, groups, hasMax } from "./series";
import { app } from "./state";
import { updateTotals } from "./totals";

const actions: PlotActions = { setWindow, follow: followNow, toggled: render };

/** render draws the view as app says; the plots are rebuilt only when what they show changed. */
export function render(): void {
  const s = app.store;
  const P = app.plots;
  const gs = groups();
  const sig = JSON.stringify([app.perNode, app.pct, gs.map((g) => [g.title, g.unit, g.series.map((x) => [x.key, x.scale, x.color])])]);
  if (sig !== P.signature) {
    P.signature = sig;
    buildPlots(gs, actions);
  } else {
    P.boxes.forEach((p, i) => (p.group = gs[i]));
  }
  $("empty").hidden = app.mode !== "none";
  // "% of max" only where an event shown has a known maximum (and is not a percentage already).
  $("pct-box").hidden = !activeColumns().some((i) => hasMax(s.cols[i]));
  if (app.follow) {
    if (app.mode === "live") {
      const end = s.n ? s.tMax : 0;
      app.xr = { min: end - app.windowS, max: end };
    } else {
      app.xr = app.mode === "view" ? { min: 0, max: app.duration } : { min: s.tMin, max: s.tMax };
    }
    if (app.xr.max <= app.xr.min) app.xr.max = app.xr.min + 1;
  }
  setPlotData(
    P.boxes.map((p) => {
      const px = Math.max(100, p.u.bbox.width / devicePixelRatio);
      const d = decimate(s, p.group.series.map((x) => x.f), app.xr.min, app.xr.max, Math.round(px * 2));
      return [d.t, ...d.v] as uPlot.AlignedData;
    }),
  );
  if (app.mode === "view") maybeFetch();
  const now = performance.now();
  if (app.mode !== "live" || now - app.totals.lastAt > 1000) {
    app.totals.lastAt = now;
    updateTotals(gs);
  }
  $("follow").classList.toggle("on", app.follow);
  setStatus(statusText());
}

/** scheduleRender renders at the next frame (once, however often it is called before). */
export function scheduleRender(): void {
  if (app.plots.rafPending) return;
  app.plots.rafPending = true;
  requestAnimationFrame(() => {
    app.plots.rafPending = false;
    render();
  });
}

/** statusText says what is shown: samples, columns, interval or duration. */
export function statusText(): string {
  const s = app.store;
  switch (app.mode) {
    case "live":
      return `${app.received} samples · ${s.cur.length} columns · interval ${si(app.state.interval_s)} s${app.state.paused ? " · paused" : ""}${app.state.recording ? " · recording " + app.state.recording : ""}`;
    case "view":
      return `${app.hello?.samples} samples · ${s.cols.length} columns · ${si(app.duration)} s`;
    case "file":
      return `${s.n} samples · ${s.cols.length} columns · ${si(s.tMax - s.tMin)} s`;
  }
  return "";
}

/** setWindow shows [a, b] and stops following. */
export function setWindow(a: number, b: number): void {
  if (!(b > a)) return;
  app.follow = false;
  app.xr = { min: a, max: b };
  render();
}

/** followNow follows the newest data (live) or the whole recording again. */
export function followNow(): void {
  app.follow = true;
  render();
}
