// The side panels of the time-series view: the event picker (by sensor,
// with search; live: switches events on the server, recordings: shows and
// hides them), the labels (a click centres the window on one) and the
// topology (nodes and the distance heatmap). Names and values are the
// data's, so they go in as text.

import { $, el, input } from "./dom";
import { gib, ranges } from "./format";
import { showError } from "./notice";
import { mode } from "./page";
import { rebuildPlots } from "./plots";
import type { Topology } from "./protocol";
import { samples } from "./samples";
import { activeColumns, eventKey } from "./series";
import { send } from "./socket";
import { render, setWindow } from "./view";

/** renderLabels lists the label marks. */
export function renderLabels(): void {
  const ul = $("labels");
  ul.replaceChildren();
  for (const m of samples.store.marks) {
    if (m.mark !== "label") continue;
    const li = el("li", { "data-t": String(m.t) }, `${m.t.toFixed(3)} s  ${m.text}`);
    li.onclick = () => {
      const half = (samples.xr.max - samples.xr.min) / 2;
      setWindow(m.t - half, m.t + half);
    };
    ul.appendChild(li);
  }
}

/** renderTopology draws the nodes and the distance heatmap; ids and values go in as text (they are the file's). */
export function renderTopology(topo: Topology | undefined): void {
  const box = $("topology");
  if (!topo || !topo.nodes.length) {
    box.textContent = "no topology in this data";
    return;
  }
  const row = (...cells: HTMLElement[]) => el("tr", {}, ...cells);
  // Rows in a tbody, as the HTML parser puts them.
  const nodes = el("tbody", {}, row(el("th", {}, "node"), el("th", {}, "CPUs"), el("th", {}, "memory GiB"), el("th", {}, "free")));
  for (const n of topo.nodes) {
    nodes.append(row(el("td", {}, String(n.id)), el("td", {}, ranges(n.cpus) || "none"), el("td", {}, gib(n.memory_total_bytes)), el("td", {}, gib(n.memory_free_bytes))));
  }
  const heat = el("tbody", {}, row(el("th"), ...topo.nodes.map((n) => el("th", {}, String(n.id)))));
  // Math.min of a string that is not a number is NaN: such a file's heatmap goes uncoloured.
  const all = topo.nodes.flatMap((n) => Object.values(n.distances).map(Number));
  const lo = Math.min(...all, 10),
    hi = Math.max(...all, 10);
  for (const a of topo.nodes) {
    const tr = row(el("th", {}, String(a.id)));
    for (const b of topo.nodes) {
      const d = Object.hasOwn(a.distances, String(b.id)) ? a.distances[String(b.id)] : undefined;
      const x = d === undefined || hi === lo ? 0 : (Number(d) - lo) / (hi - lo);
      const td = el("td", { title: `node ${a.id} → node ${b.id}: ${d ?? "?"}` }, String(d ?? "?"));
      td.style.background = `hsl(${Math.round(130 - 130 * x)} 70% ${Math.round(85 - 25 * x)}%)`;
      tr.append(td);
    }
    heat.append(tr);
  }
  box.replaceChildren(el("table", { class: "nodes" }, nodes), el("p", {}, "distances"), el("table", { class: "heat" }, heat));
}

/** An event as the picker lists it. */
interface PickerEvent {
  sensor: string;
  name: string;
  desc: string;
  unit: string;
  present: boolean;
  /** why the event cannot be counted here, and what to do (live catalog) */
  reason?: string;
  fix?: string;
}

/** pickerEvents lists the events by sensor: the live catalog's, or a recording's columns'. */
function pickerEvents(): Map<string, PickerEvent[]> {
  const bySensor = new Map<string, PickerEvent[]>();
  if (mode() === "live") {
    for (const s of samples.hello?.catalog ?? []) {
      bySensor.set(
        s.name,
        s.events.map((e): PickerEvent => {
          const ev: PickerEvent = { sensor: s.name, name: e.name, desc: e.desc, unit: e.unit, present: s.present };
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
    for (const c of samples.store.cols) {
      const list = bySensor.get(c.sensor) ?? [];
      if (!list.some((e) => e.name === c.event)) list.push({ sensor: c.sensor, name: c.event, desc: c.desc, unit: c.unit, present: true });
      bySensor.set(c.sensor, list);
    }
  }
  return bySensor;
}

/** renderPicker lists the events, grouped by sensor, with search. */
export function renderPicker(): void {
  const root = $("events");
  const q = input("search").value.trim().toLowerCase();
  root.replaceChildren();
  const enabled = new Set(activeColumns().map((i) => eventKey(samples.store.cols[i])));
  const hiddenEv = (key: string) => samples.store.cols.filter((c) => eventKey(c) === key).every((c) => samples.hidden.has(c.name) || samples.hidden.has(key));
  for (const [sensor, evs] of pickerEvents()) {
    const match = evs.filter((e) => !q || e.name.toLowerCase().includes(q) || e.desc.toLowerCase().includes(q) || sensor.includes(q));
    if (!match.length) continue;
    const det = el("details", {}, el("summary", {}, sensor, " ", el("small", {}, `(${match.length})`)));
    det.open = true;
    for (const e of match) {
      const key = `${e.sensor}.${e.name}`;
      const unavailable = e.reason !== undefined;
      const cb = el("input", { type: "checkbox" });
      cb.disabled = !e.present || unavailable;
      cb.dataset.event = key;
      cb.checked = mode() === "live" ? enabled.has(key) : !hiddenEv(key);
      cb.onchange = () => toggleEvent(key, cb.checked);
      const lab = el("label", { class: "ev" + (e.present ? "" : " absent") + (unavailable ? " unavailable" : "") }, cb, el("span", { class: "mn" }, e.name + (e.unit ? `  [${e.unit}]` : "")), el("span", { class: "desc" }, e.desc));
      lab.title = unavailable ? `${key} is unavailable here: ${e.reason}${e.fix ? `\nfix: ${e.fix}` : ""}` : key;
      if (unavailable) lab.append(el("span", { class: "why" }, `unavailable: ${e.reason}`));
      det.appendChild(lab);
    }
    root.appendChild(det);
  }
}

/** toggleEvent switches an event on or off: on the server (live), or in the plots (recordings). */
function toggleEvent(key: string, on: boolean): void {
  if (mode() === "live") {
    const s = samples.store;
    const cur = [...new Set(s.cur.map((i) => eventKey(s.cols[i])))];
    const next = on ? [...cur, key] : cur.filter((k) => k !== key);
    if (!next.length) {
      showError("keep at least one event enabled");
      renderPicker();
      return;
    }
    send({ type: "events", events: next });
    return;
  }
  const set = (k: string) => (on ? samples.hidden.delete(k) : samples.hidden.add(k));
  for (const c of samples.store.cols) if (eventKey(c) === key) set(c.name);
  set(key);
  rebuildPlots();
  render();
}
