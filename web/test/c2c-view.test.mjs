// End-to-end tests of the core-to-core latency section of the bench page (src/c2c.ts):
// `numascope view` on the synthetic c2c-6cpu.json of testdata/bench/view (CPUs listed out of
// order, one pair not measured, markup in a string), and on what `numascope bench --kind c2c`
// writes on this machine. Every cell is checked against the JSON, and the CPU order against the
// sort the view promises: node, then last-level cache, then core.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { repo, artifacts, binary, tempDir, serve, browser } from "./util.mjs";

const fixture = join(repo, "testdata/bench/view/c2c-6cpu.json"); // README.md there

/** heat is the CPU x CPU heatmap as the page has it: the column heads, and each cell's pair and value in row order. */
const heat = (page) =>
  page.$eval("#bench table.c2cmatrix", (tbl) => ({
    head: [...tbl.querySelectorAll("thead th[data-cpu]")].map((th) => ({ cpu: th.dataset.cpu, edge: th.className })),
    cells: [...tbl.querySelectorAll("td.cell")].map((td) => ({ a: td.dataset.a, b: td.dataset.b, value: td.dataset.value, cls: td.dataset.class, title: td.title })),
  }));

/** checkCells asserts that every cell holds the JSON's value for its pair, in the order given. */
function checkCells(got, m, order) {
  const at = (cpu) => m.cpus.indexOf(cpu);
  assert.equal(got.cells.length, order.length * order.length, "cells = CPUs²");
  order.forEach((a, r) =>
    order.forEach((b, c) => {
      const cell = got.cells[r * order.length + c];
      assert.equal(cell.a, String(a));
      assert.equal(cell.b, String(b));
      const v = m.matrix[at(a)][at(b)];
      assert.equal(cell.value, v === null ? "null" : String(v), `CPU ${a} <-> CPU ${b}`);
    }),
  );
}

test("view c2c.json: CPUs sorted by node, LLC and core; every cell the JSON's; classes, node matrix, line node; markup stays text", async (t) => {
  const doc = JSON.parse(readFileSync(fixture, "utf8"));
  const m = doc.c2c_ns;
  const { url } = await serve(t, ["view", fixture, "--listen", "127.0.0.1:0"], repo);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#bench table.c2cmatrix");
  const got = await heat(page);
  const order = [0, 1, 4, 2, 3, 5];
  assert.deepEqual(got.head.map((h) => h.cpu), order.map(String));
  // A thin line where the LLC changes (1 -> 4, on node 0), a thick one where the node does (4 -> 2).
  assert.deepEqual(got.head.map((h) => h.edge), ["", "", "llc-edge", "node-edge", "", ""]);
  checkCells(got, m, order);
  const pair = m.pairs.find((p) => p.a === 0 && p.b === 4);
  const cell = got.cells[0 * 6 + 2];
  assert.equal(cell.cls, "same-node");
  assert.ok(cell.title.startsWith(`CPU 0 ↔ CPU 4: ${pair.median_ns} ns\nsame node, other LLC; median of 3 repeats, ${pair.min_ns} – ${pair.max_ns} ns; line on node 1`), cell.title);
  assert.ok(got.cells[4 * 6 + 5].title.startsWith("CPU 3 ↔ CPU 5: not measured"));
  // Lower is better: the fastest pair is yellow, the slowest purple.
  const vals = m.matrix.flat().filter((v) => v !== null);
  const bg = (v) => page.$eval(`#bench table.c2cmatrix td.cell[data-value="${v}"]`, (td) => getComputedStyle(td).backgroundColor);
  assert.equal(await bg(Math.min(...vals)), "rgb(253, 231, 37)");
  assert.equal(await bg(Math.max(...vals)), "rgb(68, 1, 84)");
  // The classes and the node matrix, as the JSON has them.
  const classes = await page.$$eval("#bench table.c2cclasses tbody tr", (trs) => trs.map((tr) => [tr.dataset.class, ...[...tr.cells].map((td) => td.textContent)]));
  assert.deepEqual(classes.map((c) => c[0]), m.classes.map((c) => c.class));
  assert.deepEqual(classes.map((c) => c[1]), ["same last-level cache", "same node, other LLC", "cross node"]);
  assert.deepEqual(classes.map((c) => Number(c[2])), m.classes.map((c) => c.pairs));
  const nodes = await page.$$eval("#bench table.c2cnodes td.cell", (tds) => tds.map((td) => td.dataset.value));
  assert.deepEqual(nodes, doc.c2c_node_ns.matrix.flat().map(String));
  assert.match(await page.textContent("#bench section.bc2c h3"), /the line on node 1 \(--line-node\)/);
  // The pair not measured is listed by its CPUs; the method's markup is text, not HTML.
  assert.match(await page.textContent("#bench table.skipped"), /CPU 3 ↔ CPU 5.*seldom running/);
  assert.ok((await page.textContent("#bench section.bc2c")).includes('<img src=x onerror="window.__pwned=1">'));
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator("#bench section.bc2c img").count(), 0);
  await page.screenshot({ path: join(artifacts, "bench-c2c.png"), fullPage: true });
});

test("view on what numascope bench --kind c2c writes here: one cell per CPU pair, the JSON's values", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "c2c.json");
  execFileSync(binary, ["bench", "--kind", "c2c", "--repeat", "3", "--pair-budget", "10s", "--format", "json", "-o", file], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  const real = JSON.parse(readFileSync(file, "utf8"));
  const m = real.c2c_ns;
  assert.ok(m && real.c2c_node_ns && m.cpus.length >= 2, "bench --kind c2c wrote no c2c_ns");
  const { url } = await serve(t, ["view", file, "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#bench table.c2cmatrix");
  const got = await heat(page);
  // bench writes the CPUs sorted already: the view keeps its order.
  assert.deepEqual(got.head.map((h) => h.cpu), m.cpus.map(String));
  checkCells(got, m, m.cpus);
  assert.equal(await page.locator("#bench table.c2cclasses tbody tr").count(), m.classes.length);
  assert.equal(await page.locator("#bench table.c2cnodes td.cell").count(), real.c2c_node_ns.initiators.length ** 2);
  // The memory kinds were not measured: their figures say so.
  assert.match(await page.textContent("#bench figure[data-kind=latency]"), /measured without latency \(numascope bench --kind latency, or all, measures it\)/);
});

test("view of 400 CPUs: the heatmap's range over 160,000 cells is found by a loop (Math.min(...v) threw RangeError past about 120,000)", async (t) => {
  const n = 400;
  const cpus = [...Array(n).keys()];
  const matrix = cpus.map((a) => cpus.map((b) => (a === b ? null : 40 + ((a * 7 + b * 13) % 300) + (a + b) / 1000)));
  const doc = {
    c2c_ns: { cpus, nodes: cpus.map((c) => (c < n / 2 ? 0 : 1)), llcs: cpus.map((c) => c >> 4), cores: cpus.map((c) => `0:${c}`), matrix, classes: [], pairs: [], line_node: null, repeat: 5, sample: 0, pairs_total: (n * (n - 1)) / 2 },
  };
  const file = join(mkdtempSync(join(tmpdir(), "c2c-big-")), "c2c-400.json");
  writeFileSync(file, JSON.stringify(doc));
  const { url } = await serve(t, ["view", file, "--listen", "127.0.0.1:0"], repo);
  const page = await browser(t);
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForSelector("#bench table.c2cmatrix", { timeout: 120000 });
  assert.deepEqual(errors, []);
  assert.equal(await page.$eval("#bench table.c2cmatrix", (tbl) => tbl.dataset.cpus), String(n));
  const vals = matrix.flat().filter((v) => v !== null);
  const lo = vals.reduce((x, y) => Math.min(x, y)),
    hi = vals.reduce((x, y) => Math.max(x, y));
  const bg = (v) => page.$eval(`#bench table.c2cmatrix td.cell[data-value="${v}"]`, (td) => getComputedStyle(td).backgroundColor);
  assert.equal(await bg(lo), "rgb(253, 231, 37)");
  assert.equal(await bg(hi), "rgb(68, 1, 84)");
});
