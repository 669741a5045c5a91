// Switching the page between what it can show: samples (live, a recording
// served by view, or a file from disk) in the time-series view, an
// experiment report, a profile's pages, or a bench document's heatmaps. The server's hello and a file
// opened from disk both come through here, and only here is the page shown (src/page.ts) changed.
// Each page keeps its own state: the time-series view's is src/samples.ts, the bench and hosts
// pages keep theirs in their modules, the profile's pages in their closures.

import type { Store } from "./data";
import { showBenchPage } from "./bench";
import { showHostsPage } from "./hosts";
import type { BenchDocument, Experiment, Profile } from "./documents";
import { $, el } from "./dom";
import { si } from "./format";
import { setStatus } from "./notice";
import { setMode } from "./page";
import { renderLabels, renderPicker, renderTopology } from "./panels";
import { rebuildPlots } from "./plots";
import { renderProfile } from "./profile/pages";
import type { ProfileOptions } from "./profile/types";
import type { HostsHello, Topology } from "./protocol";
import { renderReport } from "./report";
import { samples } from "./samples";
import type { Described } from "./types";
import { render } from "./view";

/** showSamples switches to the time-series view of store; drawSamples draws it once the caller has set the rest. */
export function showSamples(mode: "live" | "view" | "file", d: Described, store: Store, title: string, host: string): void {
  setMode(mode);
  document.body.classList.remove("report", "profile", "bench", "hosts", "procs");
  document.body.classList.toggle("live", mode === "live");
  samples.hello = d;
  samples.store = store;
  samples.follow = true;
  samples.hidden.clear();
  rebuildPlots();
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
  setMode("experiment");
  document.body.classList.remove("procs", "live", "profile", "bench", "hosts");
  document.body.classList.add("report");
  $("mode").textContent = `experiment ${x.analysis.name}`;
  $("host").textContent = "";
  renderReport($("report"), x, file);
  setStatus(`${x.analysis.measured} runs · ${x.analysis.responses.length} responses`);
}

/** showProfile switches to the profile pages (src/profile/). */
export function showProfile(p: Profile, file: string, o: ProfileOptions): void {
  setMode("profile");
  document.body.classList.remove("procs", "live", "report", "bench", "hosts");
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
  setMode("bench");
  document.body.classList.remove("procs", "live", "report", "profile", "hosts");
  document.body.classList.add("bench");
  $("mode").textContent = `bench ${file}`;
  $("host").textContent = [doc.conditions.cpu_model, doc.conditions.kernel].filter(Boolean).join(" · ");
  let root = document.getElementById("bench");
  if (!root) {
    root = el("section", { id: "bench", "aria-label": "bench" });
    document.body.insertBefore(root, $("drop"));
  }
  showBenchPage(root, doc, file);
  const n = (m: { initiators: unknown[]; targets: unknown[] } | undefined) => (m ? m.initiators.length * m.targets.length : 0);
  setStatus(`${n(doc.latency_ns ?? doc.bandwidth_mbs)} pairs · ${doc.skipped.length} not measured · ${doc.notes.length} notes`);
}

/** showHosts switches to the hosts page (src/hosts.ts): one small multiple per host's recording, on one time axis. */
export function showHosts(h: HostsHello): void {
  setMode("hosts");
  document.body.classList.remove("procs", "live", "report", "profile", "bench");
  document.body.classList.add("hosts");
  $("mode").textContent = `${h.hosts.length} hosts`;
  $("host").textContent = "";
  let root = document.getElementById("hosts");
  if (!root) {
    root = el("section", { id: "hosts", "aria-label": "hosts" });
    document.body.insertBefore(root, $("drop"));
  }
  showHostsPage(root, h);
  const skipped = h.hosts.reduce((n, x) => n + x.skipped.length, 0);
  setStatus(`${h.hosts.length} recordings · ${h.hosts.reduce((n, x) => n + x.samples, 0)} samples${skipped ? ` · ${skipped} lines skipped` : ""}`);
}
