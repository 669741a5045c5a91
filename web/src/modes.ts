// Switching the page between what it can show: samples (live, a recording
// served by view, or a file from disk) in the time-series view, an
// experiment report, a profile's pages, or a bench document's heatmaps. The server's hello and a file
// opened from disk both come through here.

import type { Store } from "./data";
import { renderBench } from "./bench";
import type { BenchDocument, Experiment, Profile } from "./documents";
import { $, el } from "./dom";
import { si } from "./format";
import { setStatus } from "./notice";
import { renderLabels, renderPicker, renderTopology } from "./panels";
import { renderProfile, type ProfileOptions } from "./profile/pages";
import type { Topology } from "./protocol";
import { renderReport } from "./report";
import { app, type Described } from "./state";
import { render } from "./view";

/** showSamples switches to the time-series view of store; drawSamples draws it once the caller has set the rest. */
export function showSamples(mode: "live" | "view" | "file", d: Described, store: Store, title: string, host: string): void {
  app.mode = mode;
  document.body.classList.remove("report", "profile", "bench");
  document.body.classList.toggle("live", mode === "live");
  app.hello = d;
  app.store = store;
  app.follow = true;
  app.hidden.clear();
  app.plots.signature = "";
  $("mode").textContent = title;
  $("host").textContent = host;
}

/** drawSamples draws the side panels and the plots of the samples shown. */
export function drawSamples(topology: Topology | undefined): void {
  renderTopology(topology);
  renderPicker();
  renderLabels();
  render();
}

/** showReport switches to the experiment page. */
export function showReport(x: Experiment, file: string): void {
  app.mode = "experiment";
  app.report = x;
  document.body.classList.remove("live", "profile", "bench");
  document.body.classList.add("report");
  $("mode").textContent = `experiment ${x.analysis.name}`;
  $("host").textContent = "";
  renderReport($("report"), x, file);
  setStatus(`${x.analysis.measured} runs · ${x.analysis.responses.length} responses`);
}

/** showProfile switches to the profile pages (src/profile/). */
export function showProfile(p: Profile, file: string, o: ProfileOptions): void {
  app.mode = "profile";
  document.body.classList.remove("live", "report", "bench");
  document.body.classList.add("profile");
  $("mode").textContent = `profile ${file}`;
  $("host").textContent = "";
  let root = document.getElementById("profile");
  if (!root) {
    root = el("section", { id: "profile", "aria-label": "profile" });
    document.body.insertBefore(root, $("drop"));
  }
  renderProfile(root, p, o);
  setStatus(`${p.locations.length} locations · ${p.threads.length} threads · ${si(p.duration_s)} s`);
}

/** showBench switches to the bench page (src/bench.ts). */
export function showBench(doc: BenchDocument, file: string): void {
  app.mode = "bench";
  document.body.classList.remove("live", "report", "profile");
  document.body.classList.add("bench");
  $("mode").textContent = `bench ${file}`;
  $("host").textContent = [doc.conditions.cpu_model, doc.conditions.kernel].filter(Boolean).join(" · ");
  let root = document.getElementById("bench");
  if (!root) {
    root = el("section", { id: "bench", "aria-label": "bench" });
    document.body.insertBefore(root, $("drop"));
  }
  app.bench?.loaded?.destroy();
  app.bench = { doc, file, loaded: null };
  renderBench(root, app.bench);
  const n = (m: { initiators: unknown[]; targets: unknown[] } | undefined) => (m ? m.initiators.length * m.targets.length : 0);
  setStatus(`${n(doc.latency_ns ?? doc.bandwidth_mbs)} pairs · ${doc.skipped.length} not measured · ${doc.notes.length} notes`);
}
