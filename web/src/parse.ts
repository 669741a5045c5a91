// Reading recordings in the browser, without a server: numascope JSON Lines
// (plain, or zstd where the browser's DecompressionStream supports it) and
// the original NUMAscope JSON-array format. It mirrors internal/recording.

import { Store, type Column } from "./data";

export interface Loaded {
  store: Store;
  header: any;
  legacy: boolean;
  skipped: string[];
}

const zstdMagic = [0x28, 0xb5, 0x2f, 0xfd];

/** decompress turns zstd bytes into text, if this browser can. */
async function decompress(bytes: Uint8Array): Promise<Uint8Array> {
  let ds: DecompressionStream;
  try {
    ds = new DecompressionStream("zstd" as CompressionFormat);
  } catch {
    throw new Error(
      "this browser cannot decompress zstd: run `zstd -d FILE` and load the .jsonl, or open it with `numascope view FILE`",
    );
  }
  const out = new Blob([bytes as BlobPart]).stream().pipeThrough(ds);
  return new Uint8Array(await new Response(out).arrayBuffer());
}

export async function parseFile(name: string, buf: ArrayBuffer): Promise<Loaded> {
  let bytes: Uint8Array = new Uint8Array(buf);
  if (zstdMagic.every((b, i) => bytes[i] === b)) bytes = await decompress(bytes);
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    throw new Error(`${name}: gzip-compressed; decompress it first`);
  }
  const text = new TextDecoder().decode(bytes).replace(/^\uFEFF/, "");
  const first = text.trimStart()[0];
  if (first === "{") return parseLines(text);
  if (first === "[") return parseLegacy(text);
  throw new Error(`${name}: not a recording (it starts with ${JSON.stringify(text.slice(0, 12))})`);
}

export function parseLines(text: string): Loaded {
  const store = new Store(Infinity);
  const skipped: string[] = [];
  let header: any = null;
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
    let v: any;
    try {
      v = JSON.parse(line);
    } catch {
      if (!header) throw new Error("the header line is not valid JSON");
      skipped.push(cut ? `line ${lineNo}: cut off (the recording was probably interrupted)` : `line ${lineNo}: not valid JSON; skipped`);
      continue;
    }
    if (!header) {
      if (!v || v.type !== "header" || v.format !== "numascope") throw new Error("not a numascope recording: the first line is not its header");
      header = v;
      store.setColumns(v.columns as Column[]);
      continue;
    }
    if (Array.isArray(v)) {
      store.append(v);
      continue;
    }
    switch (v?.type) {
      case "columns":
        store.setColumns(v.columns);
        store.marks.push({ mark: "columns", t: v.t });
        break;
      case "label":
      case "interval":
      case "pause":
      case "resume":
        store.marks.push({ mark: v.type, t: v.t, text: v.text, interval_s: v.interval_s });
        break;
      case "end":
        break;
      default:
        skipped.push(`line ${lineNo}: unknown line type ${JSON.stringify(v?.type)}; skipped`);
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
  const rows: any[] = [];
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
  if (rows.length < 1 || !Array.isArray(rows[0]) || typeof rows[0][0] !== "string") {
    throw new Error("the first element of the legacy array is not [sensor, sources, rate]");
  }
  const meta = rows[0];
  let headings: string[];
  let sources = -1,
    rate = 0,
    next = 1;
  if (meta.length > 1 && meta.slice(1).every((x: any) => typeof x === "string")) {
    headings = meta.slice(1);
  } else {
    if (typeof meta[1] === "number") sources = meta[1];
    if (typeof meta[2] === "number" && meta[2] > 0) rate = meta[2];
    headings = rows[1];
    next = 2;
    if (!Array.isArray(headings) || !headings.every((x) => typeof x === "string")) {
      throw new Error("the second element of the legacy array is not the list of column headings");
    }
  }
  const sensor = ident(meta[0].toLowerCase()) || "legacy";
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
  const firstRow = rows.slice(next).find((r) => Array.isArray(r));
  const t0 = firstRow ? (firstRow[0] === "label" ? firstRow[1] : firstRow[0]) : 0;
  if (t0 >= 1e14) origin = t0;
  const deltas: number[] = [];
  let prev = NaN;
  for (const r of rows.slice(next)) {
    if (!Array.isArray(r) || r.length === 0) continue;
    if (r[0] === "label") {
      store.marks.push({ mark: "label", t: (r[1] - origin) / 1e6, text: String(r[2]) });
      continue;
    }
    if (typeof r[0] !== "number" || r.length - 1 !== cols.length) {
      skipped.push(`row ${JSON.stringify(r).slice(0, 40)}: does not match the headings; skipped`);
      continue;
    }
    const row: (number | null)[] = [(r[0] - origin) / 1e6];
    for (let i = 1; i < r.length; i++) row.push(r[i] === null ? null : pct[i - 1] ? (r[i] * 100) / rate : r[i]);
    store.append(row);
    if (r[0] - prev > 0) deltas.push(r[0] - prev);
    prev = r[0];
  }
  deltas.sort((a, b) => a - b);
  const header = {
    format: "numascope",
    version: 0,
    host: "",
    start: origin ? new Date(origin / 1000).toISOString() : undefined,
    interval_s: deltas.length ? Math.round(deltas[(deltas.length - 1) >> 1]) / 1e6 : 0,
    sensors: [{ name: sensor, present: true, sources: srcNames }],
    columns: cols,
  };
  return { store, header, legacy: true, skipped };
}
