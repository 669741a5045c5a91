// numascope's web client: live samples from `numascope live`, recordings
// from `numascope view`, experiment reports and profiles, or a file loaded
// from disk with no server at all. The protocol is docs/live-protocol.md
// (src/protocol.ts); docs/web-client.md describes the modules. This one
// wires the controls of index.html to them and starts; it keeps no state.

import "uplot/dist/uPlot.min.css";
import "./style.css";
import type uPlot from "uplot";
import { benchPlot } from "./bench";
import { connect } from "./connection";
import type { Total } from "./data";
import { $, input } from "./dom";
import { loadFile } from "./files";
import { hostPlots, type HostPlotInfo } from "./hosts";
import { showError } from "./notice";
import { mode } from "./page";
import { renderPicker } from "./panels";
import { plotBoxes, resizePlots } from "./plots";
import { showPage } from "./processes";
import { rangeState } from "./range";
import { samples, type Samples } from "./samples";
import { requestsSent, send } from "./socket";
import { takeToken } from "./token";
import { exportCSV, shownTotals } from "./totals";
import type { PlotBox } from "./types";
import { followNow, render, scheduleRender, setPct, setPerNode, setWindow, setWindowLength } from "./view";

/** What the tests and benchmarks see: read-only access to each page's state and a way to pan. */
interface TestHook {
  /** the time-series view's state (src/samples.ts) */
  samples: Samples;
  /** the plots drawn, the totals table's rows */
  boxes(): readonly PlotBox[];
  totals(): readonly Total[];
  /** view: whether the store holds fetched samples and a range request is in flight, and how many request ids were used */
  range(): { fetched: boolean; pending: boolean };
  requests(): number;
  /** the bench page's loaded-latency plot */
  benchPlot(): uPlot | null;
  setWindow(a: number, b: number): void;
  columns(): string[];
  /** the plots: where their series come from, their unit (the y axis' label) and their series */
  visible(): { group: string; unit: string; axis: string; series: { label: string; show: boolean }[] }[];
  rows(): number;
  /** the hosts page's small multiples (numascope view A B ...) */
  hosts(): HostPlotInfo[];
}

declare global {
  interface Window {
    __numascope?: TestHook;
  }
}

/** wire connects the controls (and drag and drop) to the client. */
function wire(): void {
  const val = (id: string) => input(id).value.trim();
  $("interval-set").onclick = () => send({ type: "interval", interval: val("interval") });
  $("interval").onkeydown = (e) => e.key === "Enter" && $("interval-set").click();
  $("pause").onclick = () => send({ type: samples.session.paused ? "resume" : "pause" });
  $("label-add").onclick = () => {
    const text = val("label-text");
    if (!text) return showError("type the label's text first");
    send({ type: "label", text });
    input("label-text").value = "";
  };
  $("label-text").onkeydown = (e) => e.key === "Enter" && $("label-add").click();
  $("record").onclick = () => (samples.session.recording ? send({ type: "record_stop" }) : send({ type: "record", path: val("record-path") || undefined }));
  for (const id of ["view-summed", "view-pernode"]) {
    $(id).onchange = () => {
      const per = input("view-pernode").checked;
      if (mode() === "live") send({ type: "discrete", discrete: per });
      else setPerNode(per);
    };
  }
  $("pct").onchange = () => setPct(input("pct").checked);
  $("window").onchange = () => {
    const w = Number(val("window"));
    if (!(w > 0)) return showError("the window is a number of seconds > 0");
    setWindowLength(w);
  };
  $("follow").onclick = () => followNow();
  $("tab-samples").onclick = () => showPage("samples");
  $("tab-processes").onclick = () => showPage("processes");
  $("load").onclick = () => $("file").click();
  $("file").onchange = () => {
    const f = input("file").files?.[0];
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
    resizePlots();
    scheduleRender();
  }).observe($("plots"));
}

window.__numascope = {
  samples,
  boxes: plotBoxes,
  totals: shownTotals,
  range: rangeState,
  requests: requestsSent,
  benchPlot,
  setWindow,
  columns: () => samples.store.cols.map((c) => c.name),
  visible: () =>
    plotBoxes().map((p) => ({
      group: p.group.title,
      unit: p.group.unit,
      axis: String(p.u.axes[1]?.label ?? ""),
      series: p.u.series.slice(1).map((s) => ({ label: String(s.label ?? ""), show: !!s.show })),
    })),
  rows: () => samples.store.n,
  hosts: hostPlots,
};

takeToken();
wire();
connect();
render();
