// Stored XSS: recordings, profiles, experiment reports and bench documents whose names hold
// HTML. Every field the client shows gets a payload that runs script (sets document.title and a
// global) if it is ever parsed as HTML, both opened from disk (file://, no CSP) and served by
// numascope (view, experiment --web). The page must show each payload literally, as text, and
// run none of it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { repo, binary, tempDir, serve, browser } from "./util.mjs";

const dist = "file://" + join(repo, "internal/web/dist/index.html");
const twonode = join(repo, "internal/sensor/testdata/twonode");

// The payloads set self.__pwned and document.title when run. They hold no dots (event names
// have none) and, where they name files, no slashes.
const run = (f) => `self['__pwned']='${f}';document['title']='pwned'`;
const KINDS = {
  img: (f) => `<img src=x onerror="${run(f)}">${f}`,
  svg: (f) => `"><svg onload="${run(f)}">${f}`,
  script: (f) => `<script>${run(f)}</script>${f}`,
  table: (f) => `</td></tr></table><img src=x onerror="${run(f)}">${f}`,
};
/** H returns field's payload of the given kind, and lists it among the texts to find on the page. */
function payloads() {
  const all = new Map();
  const H = (field, kind) => {
    const s = KINDS[kind](field);
    all.set(field, s);
    return s;
  };
  return { H, all };
}

/** check asserts that no payload ran or made an element, and that every text in want is shown. */
async function check(page, want, shown) {
  // An <img src=x> fails to load asynchronously: give its onerror time to run.
  await page.waitForTimeout(300);
  const r = await page.evaluate(() => ({
    title: document.title,
    pwned: self.__pwned ?? null,
    // Elements a payload made: its <img src=x>, its <svg onload>, its <script> (which innerHTML
    // creates but never runs: no less a hole), any element with an event handler attribute.
    made: document.querySelectorAll('img[src="x"], svg[onload]').length,
    scripts: [...document.scripts].filter((s) => s.textContent.includes("__pwned")).length,
    handlers: [...document.querySelectorAll("*")].flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => `<${e.localName} ${a.name}>`)),
  }));
  assert.deepEqual(r, { title: "numascope", pwned: null, made: 0, scripts: 0, handlers: [] }, "a payload became HTML");
  for (const [field, s] of want) assert.ok(shown.includes(s), `${field} is not shown literally: ${JSON.stringify(s)} not in the page's text`);
}

/** text is what the page shows now (rendered text: hidden elements left out). */
const text = (page) => page.evaluate(() => document.body.innerText);

// ---------------------------------------------------------------- recordings

/** recording writes a JSON Lines recording (docs/recording-format.md) with hostile names everywhere. */
function recording(file, { hostileTopology }) {
  const { H, all } = payloads();
  const S = H("sensor", "script");
  const src = [H("source0", "svg"), H("source1", "table")];
  const E = H("event", "img");
  const E2 = H("event2", "table");
  const U = H("unit", "svg");
  const U2 = H("unit2", "img");
  const D = H("desc", "table");
  const D2 = H("desc2", "script");
  const S2 = H("sensor2", "img");
  const E3 = H("event3", "svg");
  const columns = [
    { name: H("column0", "img"), sensor: S, event: E, sources: [src[0]], unit: U, kind: "counter", desc: D },
    { name: H("column1", "svg"), sensor: S, event: E, sources: [src[1]], unit: U, kind: "counter", desc: D },
    { name: H("column2", "table"), sensor: S, event: E2, sources: src, unit: U2, kind: "gauge", desc: D2 },
    // A sensor without natural sources (source "").
    { name: H("column3", "script"), sensor: S2, event: E3, sources: [""], unit: "%", kind: "gauge", desc: H("desc3", "svg"), max: 100 },
  ];
  // A recording served by view goes through numascope's topology type, whose node ids are numbers.
  const ids = hostileTopology ? [H("topology-node0", "table"), H("topology-node1", "img")] : [];
  const topology = hostileTopology
    ? {
        nodes: [0, 1].map((i) => ({
          id: ids[i],
          cpus: [H(`topology-cpu${i}`, "svg")],
          memory_total_bytes: 2 ** 31,
          memory_free_bytes: 2 ** 30,
          distances: { [ids[i]]: H(`topology-distance${i}`, "script"), [ids[1 - i]]: 20 },
        })),
      }
    : {
        nodes: [0, 1].map((i) => ({ id: i, cpus: [i], memory_total_bytes: 2 ** 31, memory_free_bytes: 2 ** 30, distances: { 0: i ? 21 : 10, 1: i ? 10 : 21 }, cpuless: false, allowed: true })),
        cpus: [],
        caches: [],
        packages: [],
        allowed_cpus: [0, 1],
        allowed_nodes: [0, 1],
        numa: true,
      };
  const header = {
    type: "header",
    format: "numascope",
    version: 1,
    host: H("host", "img"),
    kernel: H("kernel", "table"),
    start: "2025-03-01T12:00:00Z",
    interval_s: 0.1,
    topology,
    sensors: [
      { name: S, present: true, reason: "", sources: src },
      { name: S2, present: true, reason: "", sources: [""] },
    ],
    columns,
    command: [H("command", "svg")],
  };
  const lines = [JSON.stringify(header)];
  for (let k = 1; k <= 5; k++) {
    lines.push(JSON.stringify([k / 10, k, 2 * k, 1000 + k, 10 * k]));
    if (k === 2) lines.push(JSON.stringify({ type: "label", t: 0.25, text: H("label", "img") }));
    if (k === 3) lines.push(JSON.stringify({ type: "label", t: 0.35, text: H("label2", "table") }));
  }
  lines.push(JSON.stringify({ type: "end", t: 0.5, samples: 5, missed_deadlines: 0, dropped: 0 }));
  writeFileSync(file, lines.join("\n") + "\n");
  all.delete("command"); // the header's command is not shown for recordings
  return all;
}

/** shownRecording is the page's text in the summed and the per-node view. */
async function shownRecording(page) {
  await page.waitForSelector("#totals tbody tr");
  let s = await text(page);
  await page.check("#view-pernode");
  await page.waitForSelector("#plots .card:nth-child(2)");
  await page.waitForFunction(() => [...document.querySelectorAll("#totals tbody td")].some((td) => td.textContent.includes("source0")));
  s += await text(page);
  return s;
}

test("a recording with HTML in its names, opened from disk: shown as text, nothing runs", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "r.jsonl");
  const want = recording(file, { hostileTopology: true });
  const name = KINDS.img("filename") + ".jsonl";
  want.set("file name", KINDS.img("filename"));
  const page = await browser(t);
  await page.goto(dist);
  await page.setInputFiles("#file", { name, mimeType: "application/octet-stream", buffer: readFileSync(file) });
  await page.waitForSelector("#mode:has-text('file ')");
  assert.equal(await page.evaluate(() => window.__numascope.rows()), 5);
  await check(page, want, await shownRecording(page));
});

test("a recording with HTML in its names, served by numascope view: shown as text, nothing runs", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, KINDS.svg("filename") + ".jsonl");
  const want = recording(file, { hostileTopology: false });
  want.set("file name", KINDS.svg("filename"));
  const { url } = await serve(t, ["view", file, "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('recording')");
  await page.waitForFunction(() => window.__numascope.samples.store.n > 0);
  await check(page, want, await shownRecording(page));
});

// ---------------------------------------------------------------- profiles

/** profile writes a profile (docs/profile.md) with hostile names, and the source file it names. */
function profile(dir, srcDir) {
  const { H, all } = payloads();
  const m = (ft, loc, rem) => ({ first_touch: ft, unpinned_first_touch: 0, local: loc, remote: rem, unpinned_page: 0, unpinned_thread: 0, unpinned_both: 0 });
  // The file's base name is shown (the code table, the source page): a name without slashes.
  const srcName = H("source-file", "img") + ".c";
  const srcFile = "/build/" + srcName;
  const fn = H("function", "svg");
  const fn2 = H("function2", "table");
  const allocFn = H("alloc-function", "script");
  const allocKind = H("alloc-kind", "img");
  const p = {
    command: [H("command", "table"), H("argument", "img")],
    exit_status: 137,
    signal: H("signal", "svg"),
    duration_s: 1.5,
    nodes: [0, 1],
    numa_balancing: true,
    notes: [H("note", "svg")],
    samples: 100,
    lost: 0,
    huge_pages: 0,
    totals: m(10, 60, 40),
    access_matrix: { thread_nodes: [0, 1], page_nodes: [0, 1], counts: [[30, 20], [20, 30]] },
    locations: [
      { function: fn, file: srcFile, line: 3, metrics: m(10, 50, 30) },
      { function: fn2, file: srcFile, line: 5, metrics: m(0, 10, 10) },
    ],
    threads: [
      {
        tid: 100,
        pid: 100,
        comm: H("thread", "script"),
        nodes: [0],
        metrics: m(10, 60, 40),
        binding_log: [{ time_s: 0.1, cpus: H("binding-cpus", "table"), nodes: [0], via: H("binding-via", "img") }],
      },
    ],
    mappings: [{ kind: H("mapping-kind", "svg"), file: H("mapping-file", "table"), metrics: m(10, 60, 40) }],
    allocations: [{ function: allocFn, file: srcFile, line: 2, kind: allocKind, calls: 1, bytes: 4096, metrics: m(10, 60, 40) }],
  };
  const file = join(dir, "p.json");
  writeFileSync(file, JSON.stringify(p, null, 1));
  const lines = ["#include <stdlib.h>", H("source-line2", "table"), H("source-line3", "img"), "int x;", H("source-line5", "script"), "}"];
  if (srcDir) writeFileSync(join(srcDir, srcName), lines.join("\n") + "\n");
  else for (const k of ["source-line2", "source-line3", "source-line5"]) all.delete(k);
  return { file, want: all };
}

/** shownProfile is the text of every profile page, with the thread's pinning log and the source open. */
async function shownProfile(page, withSource) {
  const tab = (id) => page.click(`#profile .ptabs button[data-page="${id}"]`);
  let s = await text(page);
  await tab("matrix");
  s += await text(page);
  await tab("threads");
  await page.click("#profile table.threads tbody tr[data-tid]");
  await page.waitForSelector("#profile table.binding-log");
  s += await text(page);
  await tab("code");
  s += await text(page);
  await page.check("#pgroup-line");
  s += await text(page);
  await tab("memory");
  s += await text(page);
  await tab("code");
  await page.click('#profile table.code tbody tr[data-line="3"]');
  await page.waitForSelector(withSource ? '#profile table.src tr.target[data-line="3"] td.code' : "#profile .source-missing");
  s += await text(page);
  return s;
}

test("a profile with HTML in its names, opened from disk: shown as text, nothing runs", async (t) => {
  const dir = tempDir(t);
  const { file, want } = profile(dir, null);
  const name = KINDS.svg("profile-name") + ".json";
  want.set("file name", KINDS.svg("profile-name"));
  const page = await browser(t);
  await page.goto(dist);
  await page.setInputFiles("#file", { name, mimeType: "application/json", buffer: readFileSync(file) });
  await page.waitForSelector("#profile .ptabs");
  await check(page, want, await shownProfile(page, false));
});

test("a profile with HTML in its names and source, served by numascope view: shown as text, nothing runs", async (t) => {
  const dir = tempDir(t);
  const srcDir = join(dir, "src");
  mkdirSync(srcDir);
  const { file, want } = profile(dir, srcDir);
  const { url } = await serve(t, ["view", file, "--listen", "127.0.0.1:0", "--source-path", srcDir], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#profile .ptabs");
  const shown = await shownProfile(page, true);
  // The source line with an allocation site: its kind is shown after the code.
  assert.match(await page.textContent('#profile table.src tr[data-line="2"]'), /alloc-kind/);
  await check(page, want, shown);
});

// ---------------------------------------------------------------- experiment reports

/**
 * experiment runs a real tiny experiment whose name and levels hold HTML (a quoted here-document
 * passes the levels to the shell as text) and returns the names and numascope's JSON analysis.
 */
function experiment(dir) {
  const { H, all } = payloads();
  const name = H("experiment", "img");
  const levels = [H("level1", "svg"), H("level2", "table")];
  const spec = [
    `name = ${JSON.stringify(name)}`,
    `command = ${JSON.stringify("sleep 0.0{a}\ncat >/dev/null <<'EOF'\n{b}\nEOF\n")}`,
    "replications = 2",
    "seed = 3",
    'interval = "5ms"',
    'events = ["node.*.numa_hit", "node.*.MemFree"]',
    'responses = ["wall_time", "rate:node.MemFree"]',
    "",
    "[[factor]]",
    'name = "a"',
    "levels = [1, 4]",
    "",
    "[[factor]]",
    'name = "b"',
    `levels = ${JSON.stringify(levels)}`,
    "",
  ].join("\n");
  writeFileSync(join(dir, "x.toml"), spec);
  const run = (...args) => execFileSync(binary, ["--root", twonode, "experiment", "x.toml", ...args], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  run();
  return { want: all, json: run("--analyze", "--format", "json") };
}

test("an experiment report with HTML in its names, served by experiment --web and opened from disk", async (t) => {
  const dir = tempDir(t);
  const { want, json } = experiment(dir);
  const { url } = await serve(t, ["--root", twonode, "experiment", "x.toml", "--analyze", "--web", "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#report section.response");
  await check(page, want, await text(page));

  // From disk, any name can be hostile: the events, the responses and the factors too.
  const { H, all } = payloads();
  const ev = H("report-event", "svg");
  const resp = "rate:" + H("report-response", "script");
  all.set("report-response", resp);
  const factor = H("report-factor", "table");
  const rename = (s) => s.replaceAll('"rate:node.MemFree"', JSON.stringify(resp)).replaceAll('"node.MemFree"', JSON.stringify(ev));
  const analysis = JSON.parse(rename(json));
  for (const f of analysis.factors) if ((f.name ?? f.Name) === "b") f.name = f.Name = factor;
  for (const r of analysis.responses) for (const term of r.anova?.terms ?? []) term.name = term.name.replace(/\bb\b/, factor);
  // A regime comparison and a per-regime distribution, as an experiment with regimes has.
  const [base, other, cmpEvent, regime] = [H("regime-base", "img"), H("regime-other", "table"), H("comparison-event", "script"), H("regime", "svg")];
  analysis.comparisons = [{ base, other, speedup: 1.5, events: [{ event: cmpEvent, base: 1, other: 2, change_percent: 100 }] }];
  const box = { min: 1, q1: 1.5, median: 2, q3: 2.5, max: 3, max_node: "1", max_share: 0.75, outlier: false };
  analysis.distributions = [{ event: ev, regime, distribution: box, per_node: { 0: 1, 1: 3 } }];
  // The runs of the results file, as experiment --web sends them: a boxplot per event.
  const runs = rename(readFileSync(join(dir, "x.results.jsonl"), "utf8"))
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l))
    .filter((r) => r.type === "run");
  assert.equal(runs.length, 8);
  const file = join(dir, "report.json");
  writeFileSync(file, JSON.stringify({ analysis, runs }));
  const disk = await browser(t);
  await disk.goto(dist);
  await disk.setInputFiles("#file", file);
  await disk.waitForSelector("#report section.response");
  for (const [k, v] of want) all.set(k, v);
  await check(disk, all, await text(disk));
});

// ---------------------------------------------------------------- bench documents

/**
 * benchDoc writes a bench document (docs/bench.md) whose every shown string holds HTML. Served by
 * view, node ids are integers (view checks them); from disk they can be anything, so they are
 * hostile too.
 */
function benchDoc(file, { hostileIds }) {
  const { H, all } = payloads();
  const ids = hostileIds ? [H("node0", "img"), H("node1", "table"), H("node2", "svg")] : [0, 1, 2];
  const [a, b, c] = ids;
  const m = (kernel, vals) => ({
    ...(kernel ? { kernel } : {}),
    initiators: [a, b],
    targets: [a, b, c],
    matrix: vals,
    min: vals,
    max: vals,
    median: vals,
    samples: vals.map((r) => r.map((v) => (v === null ? [] : [v]))),
    cpus: hostileIds ? [[H("cpu0", "script")], [H("cpu1", "img")]] : [[0], [1]],
    repeat: 1,
  });
  const node = (id, k) => ({ id, cpus: k < 2 ? [k] : [], cpuless: k === 2, memory_tier: H(`tier${k}`, ["img", "svg", "table"][k]), distances: Object.fromEntries(ids.map((x, j) => [String(x), j === k ? 10 : k === 2 ? 20 : H(`distance${k}${j}`, "script")])) });
  const doc = {
    latency_ns: m(null, [[90, 140, 250], [140, 90, null]]),
    bandwidth_mbs: m(H("kernel-name", "svg"), [[12000, 7000, 5000], [7000, 12000, null]]),
    placement: { min_fraction_on_target: 1, pairs: [{ kind: "latency", initiator: a, target: b, fraction_on_target: 1, pages_checked: 4 }] },
    // Node 0 -> 0, the cell hovered, has no rated value: its reason is shown.
    rated: {
      initiators: [a, b],
      targets: [a, b, c],
      read_latency_ns: [[null, null, null], [null, 80, 230]],
      missing: [{ initiator: a, target: a, reason: H("rated-missing", "svg") }],
      memory_tiers: { [String(a)]: 4 },
      not_reported: "",
      tier_order: { checked: true, contradictions: [{ kind: "latency", initiator: a, text: H("contradiction", "table") }] },
    },
    conditions: {
      cpu_model: H("cpu-model", "img"),
      kernel: H("kernel", "table"),
      governors: [H("governor", "svg")],
      thp: H("thp", "script"),
      numa_balancing: H("numa-balancing", "img"),
      numa_balancing_off_during_run: false,
      virtual: true,
      hypervisor: H("hypervisor", "table"),
      sys_vendor: H("sys-vendor", "svg"),
      product_name: H("product-name", "script"),
      root: false,
      kernel_isa: H("kernel-isa", "img"),
      [H("condition-key", "table")]: H("condition-value", "svg"),
    },
    skipped: [
      { kind: "latency", initiator: b, target: c, reason: H("skip-reason", "img") },
      { kind: H("skip-kind", "table"), initiator: b, target: c, reason: H("skip-reason2", "svg") },
    ],
    notes: [H("note", "script")],
    topology: { nodes: ids.map(node) },
    loaded: {
      kernel: H("loaded-kernel", "img"),
      mix: H("loaded-mix", "svg"),
      pairs: [
        { initiator: a, target: c, bandwidth_mbs: [0, 1000, 2000], latency_ns: [250, 260, 400] },
        // A pair without a curve, as bench writes it: null, with the reason shown.
        { initiator: b, target: c, bandwidth_mbs: null, latency_ns: null, reason: H("loaded-reason", "table") },
      ],
    },
  };
  // Node 2 has no CPUs, so no row: its distances are never shown (numbers, then).
  writeFileSync(file, JSON.stringify(doc, null, 1));
  return all;
}

/** shownBench is the bench page's text, with a cell hovered (its details are shown beside the heatmap). */
async function shownBench(page) {
  await page.waitForSelector("#bench .loaded-plot canvas");
  await page.hover("#bench table.bmatrix[data-kind=latency] td.cell.null");
  let s = await text(page);
  await page.hover("#bench table.bmatrix[data-kind=latency] td.cell:not(.null)");
  s += await text(page);
  return s;
}

test("a bench document with HTML in its names, opened from disk: shown as text, nothing runs", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "b.json");
  const want = benchDoc(file, { hostileIds: true });
  const name = KINDS.table("bench-name") + ".json";
  want.set("file name", KINDS.table("bench-name"));
  const page = await browser(t);
  await page.goto(dist);
  await page.setInputFiles("#file", { name, mimeType: "application/json", buffer: readFileSync(file) });
  await page.waitForSelector("#bench table.bmatrix");
  await check(page, want, await shownBench(page));
});

test("a bench document with HTML in its names, served by numascope view: shown as text, nothing runs", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, KINDS.img("bench-file") + ".json");
  const want = benchDoc(file, { hostileIds: false });
  want.set("file name", KINDS.img("bench-file"));
  const { url } = await serve(t, ["view", file, "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#bench table.bmatrix");
  await check(page, want, await shownBench(page));
});
