// Reading recordings in the browser, without a server: numascope JSON Lines
// (plain, or zstd-compressed, decoded with fzstd) and
// the original NUMAscope JSON-array format. It mirrors internal/recording.

import { Decompress } from "fzstd";
import { Store } from "./data";
import * as J from "./json";
import { asColumn, asMark, asSensorInfo, asTopology, type Column, type SensorInfo, type Topology } from "./protocol";

/** What the client uses of a recording's header line (docs/recording-format.md). */
export interface RecordingHeader {
  host: string;
  kernel: string;
  topology?: Topology;
  sensors: SensorInfo[];
  columns: Column[];
}

export interface Loaded {
  store: Store;
  header: RecordingHeader;
  legacy: boolean;
  skipped: string[];
}

const zstdMagic = [0x28, 0xb5, 0x2f, 0xfd];

/**
 * unzstd decompresses zstd bytes with fzstd, a pure-JS decoder: Chromium's
 * DecompressionStream has no "zstd". It decodes block by block, so a stream
 * cut off mid-way (a recording still being written, or a recorder that was
 * killed) keeps every block that arrived whole; cut says where it stopped.
 */
export function unzstd(bytes: Uint8Array): { data: Uint8Array; cut: string } {
  const parts: Uint8Array[] = [];
  let size = 0;
  // The decoder may hand out views into its window buffer: copy them.
  const d = new Decompress((chunk) => {
    parts.push(chunk.slice());
    size += chunk.length;
  });
  let cut = "";
  try {
    const step = 1 << 20;
    for (let o = 0; o < bytes.length; o += step) d.push(bytes.subarray(o, Math.min(bytes.length, o + step)));
    d.push(new Uint8Array(0), true);
  } catch (e) {
    cut = J.errorText(e);
  }
  const data = new Uint8Array(size);
  let o = 0;
  for (const p of parts) {
    data.set(p, o);
    o += p.length;
  }
  return { data, cut };
}

export async function parseFile(name: string, buf: ArrayBuffer): Promise<Loaded> {
  let bytes: Uint8Array = new Uint8Array(buf);
  let cutNote = "";
  if (zstdMagic.every((b, i) => bytes[i] === b)) {
    const z = unzstd(bytes);
    if (z.cut) {
      if (z.data.length === 0) throw new Error(`${name}: the zstd data is damaged or cut off before its first whole block (${z.cut})`);
      cutNote = `the zstd stream ends early (${z.cut}): the recording was still being written or was killed; showing the ${z.data.length} bytes that decoded`;
    }
    bytes = z.data;
  }
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    throw new Error(`${name}: gzip-compressed; decompress it first`);
  }
  const text = new TextDecoder().decode(bytes).replace(/^\uFEFF/, "");
  const first = text.trimStart()[0];
  let rec: Loaded;
  if (first === "{") rec = parseLines(text);
  else if (first === "[") rec = parseLegacy(text);
  else throw new Error(`${name}: not a recording (it starts with ${JSON.stringify(text.slice(0, 12))})`);
  if (cutNote) rec.skipped.unshift(cutNote);
  return rec;
}

export function parseLines(text: string): Loaded {
  const store = new Store(Infinity);
  const skipped: string[] = [];
  let header: RecordingHeader | null = null;
  let lineNo = 0;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf("\n", start);
    const cut = end < 0;
    if (cut) end = text.length;
    const line = text.slice(start, end).trim();
    start = end + 1;
    lineNo++;
    if (!line) continue;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      if (!header) throw new Error("the header line is not valid JSON");
      skipped.push(cut ? `line ${lineNo}: cut off (the recording was probably interrupted)` : `line ${lineNo}: not valid JSON; skipped`);
      continue;
    }
    if (!header) {
      if (!J.isObj(v) || v.type !== "header" || v.format !== "numascope") throw new Error("not a numascope recording: the first line is not its header");
      header = {
        host: J.strOr(v.host, ""),
        kernel: J.strOr(v.kernel, ""),
        topology: asTopology(v.topology),
        sensors: J.list(v.sensors, asSensorInfo),
        columns: J.list(v.columns, asColumn),
      };
      store.setColumns(header.columns);
      continue;
    }
    const row = J.row(v);
    if (row) {
      store.append(row);
      continue;
    }
    const o = J.obj(v);
    switch (o.type) {
      case "columns":
        store.setColumns(J.list(o.columns, asColumn));
        store.marks.push({ mark: "columns", t: J.numOr(o.t, NaN) });
        break;
      case "label":
      case "interval":
      case "pause":
      case "resume": {
        const m = asMark(o);
        if (m) store.marks.push({ ...m, mark: o.type });
        break;
      }
      case "end":
        break;
      default:
        skipped.push(`line ${lineNo}: unknown line type ${JSON.stringify(o.type)}; skipped`);
    }
  }
  if (!header) throw new Error("the recording is empty");
  return { store, header, legacy: false, skipped };
}

function ident(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]+/g, "_").replace(/^_+|_+$/g, "");
}

/** parseLegacy reads the original NUMAscope's recordings (see internal/recording/legacy.go). */
export function parseLegacy(text: string): Loaded {
  const skipped: string[] = [];
  // One element per line; an interrupted recording lacks the closing ']'.
  const rows: unknown[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    let l = lines[i].trim();
    if (i === 0 && l.startsWith("[")) l = l.slice(1);
    l = l.replace(/,\s*$/, "");
    if (l === "]" || l === "") continue;
    if (l.endsWith("]]")) l = l.slice(0, -1);
    try {
      rows.push(JSON.parse(l));
    } catch {
      if (rows.length < 2) throw new Error(`line ${i + 1}: the legacy NUMAscope header is corrupt`);
      skipped.push(`line ${i + 1}: not valid JSON; skipped`);
    }
  }
  const first = rows[0];
  const meta: readonly unknown[] = Array.isArray(first) ? first : [];
  const name = meta[0];
  if (typeof name !== "string") {
    throw new Error("the first element of the legacy array is not [sensor, sources, rate]");
  }
  const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === "string");
  let headings: string[];
  let sources = -1,
    rate = 0,
    next = 1;
  const named = meta.slice(1);
  if (named.length > 0 && isStrings(named)) {
    headings = named;
  } else {
    if (typeof meta[1] === "number") sources = meta[1];
    if (typeof meta[2] === "number" && meta[2] > 0) rate = meta[2];
    const h = rows[1];
    next = 2;
    if (!isStrings(h)) {
      throw new Error("the second element of the legacy array is not the list of column headings");
    }
    headings = h;
  }
  const sensor = ident(name.toLowerCase()) || "legacy";
  let maxSrc = -1;
  const hs = headings.map((h) => {
    const m = /^(.*):(\d+)$/.exec(h);
    if (m) {
      maxSrc = Math.max(maxSrc, +m[2]);
      return { base: m[1].trim(), source: +m[2] };
    }
    return { base: h.trim(), source: -1 };
  });
  sources = Math.max(sources, maxSrc + 1);
  const srcNames = sources >= 1 ? Array.from({ length: sources }, (_, i) => String(i)) : [""];
  const used = new Set<string>();
  const pct: boolean[] = [];
  const cols: Column[] = hs.map((h, i) => {
    let base = h.base;
    const c: Column = { name: "", sensor, event: "", sources: [], unit: "", kind: "counter", desc: h.base };
    pct[i] = false;
    if (base.startsWith("%")) {
      if (rate > 0) {
        pct[i] = true;
        c.unit = "%";
        c.max = 100;
      }
      base = base.slice(1);
    }
    c.event = ident(base) || `column${i + 1}`;
    const src = h.source >= 0 ? String(h.source) : "";
    c.sources = h.source >= 0 ? [src] : srcNames;
    let name = src ? `${sensor}.${src}.${c.event}` : `${sensor}.${c.event}`;
    for (let k = 2; used.has(name); k++) name = src ? `${sensor}.${src}.${c.event}_${k}` : `${sensor}.${c.event}_${k}`;
    used.add(name);
    c.name = name;
    return c;
  });
  const store = new Store(Infinity);
  store.setColumns(cols);
  let origin = 0;
  const data = rows.slice(next).filter((r): r is unknown[] => Array.isArray(r));
  const firstRow = data[0];
  const t0 = firstRow ? (firstRow[0] === "label" ? firstRow[1] : firstRow[0]) : 0;
  if (typeof t0 === "number" && t0 >= 1e14) origin = t0;
  for (const r of data) {
    if (r.length === 0) continue;
    const t = r[0];
    if (t === "label") {
      store.marks.push({ mark: "label", t: (Number(r[1]) - origin) / 1e6, text: String(r[2]) });
      continue;
    }
    if (typeof t !== "number" || r.length - 1 !== cols.length) {
      skipped.push(`row ${JSON.stringify(r).slice(0, 40)}: does not match the headings; skipped`);
      continue;
    }
    const row: (number | null)[] = [(t - origin) / 1e6];
    for (let i = 1; i < r.length; i++) {
      const v = r[i];
      row.push(typeof v !== "number" ? null : pct[i - 1] ? (v * 100) / rate : v);
    }
    store.append(row);
  }
  // A legacy header names no host or kernel, and one sensor with the sources the headings imply.
  const header: RecordingHeader = { host: "", kernel: "", sensors: [{ name: sensor, present: true, sources: srcNames }], columns: cols };
  return { store, header, legacy: true, skipped };
}
