// The connection to numascope live / view / experiment --web (the websocket
// of docs/live-protocol.md): connect() opens it when the page came from a
// server, and every message it brings is read (src/protocol.ts) and applied
// here: the hello picks the page, batches and marks go into the store, and
// replies go to whoever asked.

import { Store } from "./data";
import { $, input } from "./dom";
import { interval } from "./format";
import { errorText } from "./json";
import { drawSamples, showBench, showHosts, showProfile, showReport, showSamples } from "./modes";
import { setStatus, showError } from "./notice";
import { mode } from "./page";
import { renderLabels, renderPicker } from "./panels";
import { profileDisconnected, profileMessage, serverSource } from "./profile/sources";
import { parseServerMessage, PROTOCOL, type DataHello, type Hello, type ServerMessage, type State } from "./protocol";
import { onRange, resetRange } from "./range";
import { samples } from "./samples";
import { groups } from "./series";
import { attach, detach, send } from "./socket";
import { askToken, token, wsProtocols } from "./token";
import { onTotals, resetTotals } from "./totals";
import { render, scheduleRender, statusText } from "./view";

/**
 * connect opens the websocket (not for a page opened from disk), offering
 * the tab's token as a subprotocol (src/token.ts). A connection refused
 * before it opened (no token, a wrong one, a stopped server: the browser
 * does not say which) asks for the token rather than failing silently.
 */
export function connect(): void {
  if (location.protocol !== "http:" && location.protocol !== "https:") return;
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`, wsProtocols());
  attach(ws);
  let opened = false;
  ws.onopen = () => (opened = true);
  ws.onmessage = (e: MessageEvent<unknown>) => {
    let m: ServerMessage | null;
    try {
      m = parseServerMessage(typeof e.data === "string" ? e.data : "");
    } catch (err) {
      showError(errorText(err));
      return;
    }
    if (m) onMessage(m);
  };
  ws.onclose = (e) => {
    if (!detach(ws)) return;
    if (!opened) {
      setStatus("not connected");
      askToken(
        token()
          ? `numascope at ${location.host} refused the connection: the token this tab holds may be wrong (numascope makes a new one each time it starts, unless NUMASCOPE_TOKEN gives one), or numascope has stopped or serves its most clients (--max-clients). Paste the token, or the URL numascope printed:`
          : `numascope at ${location.host} needs its token. Paste the token, or the whole URL numascope printed (it ends in ?token=...):`,
        connect,
      );
      return;
    }
    profileDisconnected(e.reason);
    setStatus(`disconnected${e.reason ? ": " + e.reason : ""}`);
    if (mode() === "live" || mode() === "view") showError(`connection closed${e.reason ? ": " + e.reason : ""}; reload to reconnect`);
  };
}

function onMessage(m: ServerMessage): void {
  if (profileMessage(m)) return;
  switch (m.type) {
    case "hello":
      onHello(m);
      break;
    case "batch":
      for (const row of m.samples) samples.store.append(row);
      samples.received += m.samples.length;
      scheduleRender();
      break;
    case "columns":
      samples.store.setColumns(m.columns);
      samples.store.marks.push({ mark: "columns", t: m.t });
      applyState(m.state);
      renderPicker();
      scheduleRender();
      break;
    case "mark":
      samples.store.marks.push({ mark: m.mark, t: m.t, text: m.text, interval_s: m.interval_s });
      if (m.mark === "label") renderLabels();
      scheduleRender();
      break;
    case "state":
      applyState(m.state);
      break;
    case "range":
      onRange(m);
      render();
      break;
    case "totals":
      onTotals(m, groups());
      break;
    case "error":
      showError(m.error);
      break;
    case "ok":
      showError("");
      break;
  }
}

function onHello(m: Hello): void {
  if (m.protocol !== PROTOCOL) showError(`this client speaks protocol ${PROTOCOL}, the server ${m.protocol}: reload the page`);
  switch (m.mode) {
    case "experiment":
      showReport(m.experiment, m.file);
      return;
    case "profile":
      showProfile(m.profile, m.file, { file: m.file, hints: m.hints, sourcePath: m.source_path, fetch: serverSource(send) });
      return;
    case "bench":
      showBench(m.bench, m.file);
      return;
    case "hosts":
      showHosts(m);
      return;
  }
  showData(m);
}

/** showData shows the samples of live or view. */
function showData(m: DataHello): void {
  const store = new Store();
  store.setColumns(m.columns);
  showSamples(m.mode, m, store, m.mode === "live" ? "live" : `recording ${m.file ?? ""}`, [m.host, m.kernel].filter(Boolean).join(" · "));
  if (m.mode === "live") {
    applyState(m.state);
  } else {
    samples.duration = m.duration_s ?? 0;
    resetTotals();
    samples.store.marks = m.marks;
    resetRange();
    if (m.skipped.length) showError(`${m.skipped.length} problems reading the file: ${m.skipped[0]}`);
  }
  drawSamples(m.topology);
}

/** applyState shows the live session's shared state in the controls. */
function applyState(st: State): void {
  samples.session = st;
  input("interval").value = interval(st.interval_s);
  $("pause").textContent = st.paused ? "resume" : "pause";
  $("pause").classList.toggle("on", st.paused);
  $("record").textContent = st.recording ? "stop recording" : "record";
  $("record").classList.toggle("on", !!st.recording);
  if (mode() === "live") {
    samples.perNode = st.discrete;
    input(st.discrete ? "view-pernode" : "view-summed").checked = true;
  }
  setStatus(statusText());
}
