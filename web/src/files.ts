// Files opened from disk (the load button, or dropped on the page): an
// experiment report, a profile, a bench document, or a recording
// (src/parse.ts), recognised by their first bytes and keys and read in the
// browser, without a server.

import { asBench, asExperiment, asProfile, type BenchDocument, type Experiment, type Profile } from "./documents";
import { errorText } from "./json";
import { drawSamples, showBench, showProfile, showReport, showSamples } from "./modes";
import { setStatus, showError } from "./notice";
import { parseFile } from "./parse";
import { disconnect } from "./socket";

/** head is the first bytes of a file as text, without leading white space. */
function head(buf: ArrayBuffer): string {
  return new TextDecoder().decode(new Uint8Array(buf, 0, Math.min(buf.byteLength, 64))).trimStart();
}

/** json parses a whole file; undefined when it is not JSON. */
function json(buf: ArrayBuffer): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(buf));
  } catch {
    return undefined;
  }
}

/** experimentIn recognises an experiment report: one (indented) JSON object, where a recording's first line is its header. */
function experimentIn(buf: ArrayBuffer): Experiment | null {
  const h = head(buf);
  if (!h.startsWith("{") || /^\{\s*"type"\s*:\s*"header"/.test(h)) return null;
  return asExperiment(json(buf));
}

/** profileIn recognises a profile: one JSON object with an access matrix. */
function profileIn(buf: ArrayBuffer): Profile | null {
  const h = head(buf);
  if (!h.startsWith("{") || /^\{\s*"type"\s*:/.test(h)) return null;
  return asProfile(json(buf));
}

/** benchIn recognises a bench document: one JSON object with latency_ns, bandwidth_mbs or loaded. */
function benchIn(buf: ArrayBuffer): BenchDocument | null {
  const h = head(buf);
  if (!h.startsWith("{") || /^\{\s*"type"\s*:/.test(h)) return null;
  return asBench(json(buf));
}

/** loadFile opens a file from disk in place of what is shown (and of the connection). */
export async function loadFile(file: File): Promise<void> {
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
    const b = benchIn(buf);
    if (b) {
      disconnect();
      showBench(b, file.name);
      return;
    }
    const rec = await parseFile(file.name, buf);
    disconnect();
    const h = rec.header;
    // A file's sensors serve as the catalog, with no events, as in view mode.
    const catalog = h.sensors.map((s) => ({ ...s, events: [] }));
    showSamples("file", { catalog, columns: h.columns }, rec.store, `file ${file.name}${rec.legacy ? " (NUMAscope format)" : ""}`, [h.host, h.kernel].filter(Boolean).join(" · "));
    if (rec.skipped.length) showError(`${rec.skipped.length} problems reading ${file.name}: ${rec.skipped[0]}`);
    drawSamples(h.topology);
  } catch (e) {
    showError(`${file.name}: ${errorText(e)}`);
    setStatus("");
  }
}
