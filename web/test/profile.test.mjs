// End-to-end tests of the profile pages: the real 4-node capture of testdata/profiles (serial
// init of profnuma on node 0, then a pinned worker per node) served by `numascope view`, drawn
// in headless Chromium. Every number on the page is checked against the JSON file, the hints
// against `numascope report`, and the source against the file on disk.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { repo, artifacts, binary, tempDir, serve, browser } from "./util.mjs";

const fixture = join(repo, "testdata/profiles/serial-init-4node.json");
const srcDir = join(repo, "testdata/profiles/src"); // the sources profnuma was built from
const prof = JSON.parse(readFileSync(fixture, "utf8"));
const srcLines = readFileSync(join(srcDir, "profnuma.c"), "utf8").split("\n");
const marked = (mark) => srcLines.findIndex((l) => l.includes(`/* @${mark} */`)) + 1;
const computeLine = marked("compute");
const METRICS = ["first_touch", "unpinned_first_touch", "local", "remote", "unpinned_page", "unpinned_thread", "unpinned_both"];
const num = (s) => Number(String(s).replace(/,/g, ""));

/** reportHints are the hints `numascope report` prints for the fixture. */
function reportHints() {
  const out = execFileSync(binary, ["report", fixture], { encoding: "utf8" });
  const i = out.indexOf("\nHints\n");
  assert.ok(i >= 0, `numascope report printed no hints:\n${out}`);
  return out
    .slice(i + 7)
    .split("\n")
    .filter((l) => l.startsWith("- "))
    .map((l) => l.slice(2));
}

async function open(t, args) {
  const { url } = await serve(t, ["view", fixture, "--listen", "127.0.0.1:0", ...args], repo);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#profile .ptabs");
  return page;
}

const tab = (page, id) => page.click(`#profile .ptabs button[data-page="${id}"]`);

test("the fixture is the known answer: remote accesses at @compute, pages placed at @init", () => {
  const top = prof.locations.reduce((a, b) => (b.metrics.remote > a.metrics.remote ? b : a));
  assert.equal(top.function, "compute");
  assert.equal(top.line, computeLine);
  assert.ok(top.metrics.remote > 0.9 * prof.totals.remote, `compute line has ${top.metrics.remote} of ${prof.totals.remote} remote accesses`);
  assert.ok(prof.locations.some((l) => l.line === marked("init") && l.metrics.first_touch >= 8192));
});

test("view PROFILE: summary, heatmap, threads, sorting, source with metrics per line", async (t) => {
  const page = await open(t, ["--source-path", srcDir]);
  assert.equal(await page.textContent("#mode"), `profile ${fixture}`);
  assert.equal(await page.isVisible("#plots"), false, "the time-series view is shown over the profile");

  // Summary: the command, every total as in the JSON, numascope report's hints.
  assert.equal(await page.textContent("#profile h2.command"), prof.command.join(" "));
  for (const m of METRICS) {
    const cell = page.locator(`#profile table.totals tr[data-metric="${m}"] td[data-value]`);
    assert.equal(num(await cell.getAttribute("data-value")), prof.totals[m], m);
    assert.equal(num(await cell.textContent()), prof.totals[m], `${m} as shown`);
  }
  assert.equal(num(await page.getAttribute('#profile tr[data-metric="accesses"] td[data-value]', "data-value")), prof.totals.local + prof.totals.remote);
  assert.equal(await page.locator('#profile tr[data-metric="accesses_node_unknown"]').count(), 0, "a node-unknown row for a profile with none");
  assert.equal(num(await page.textContent('#profile dd[data-fact="page faults sampled"]')), prof.samples);
  assert.equal(num(await page.textContent('#profile dd[data-fact="lost"]')), prof.lost);
  const hints = await page.locator("#profile ul.hints li").allTextContents();
  assert.deepEqual(hints, reportHints());
  assert.match(hints.join("\n"), /went to pages on node 0/);
  assert.deepEqual(await page.locator("#profile ul.notes li").allTextContents(), prof.notes);

  // The summary's small heatmap has the same counts; a click opens the full one.
  const mini = await page.$$eval("#profile section[data-page=summary] table.matrix.mini td.cell", (tds) => tds.map((td) => +td.dataset.count));
  assert.deepEqual(mini, prof.access_matrix.counts.flat());
  await page.click("#profile table.matrix.mini");
  assert.equal(await page.isVisible("#profile section[data-page=matrix] table.matrix"), true);

  // The access matrix: every cell is the JSON's count, the diagonal (only) is marked.
  await tab(page, "matrix");
  const cells = await page.$$eval("#profile section[data-page=matrix] table.matrix td.cell", (tds) =>
    tds.map((td) => ({ row: +td.dataset.row, col: +td.dataset.col, count: +td.dataset.count, shown: td.querySelector(".count").textContent, pct: td.querySelector(".rowpct").textContent, diag: td.classList.contains("diag"), title: td.title })),
  );
  const m = prof.access_matrix;
  assert.equal(cells.length, m.thread_nodes.length * m.page_nodes.length);
  for (const c of cells) {
    const i = m.thread_nodes.indexOf(c.row),
      j = m.page_nodes.indexOf(c.col);
    const want = m.counts[i][j];
    const rowSum = m.counts[i].reduce((a, b) => a + b, 0);
    assert.equal(c.count, want, `cell ${c.row},${c.col}`);
    assert.equal(num(c.shown), want, `cell ${c.row},${c.col} as shown`);
    assert.equal(c.diag, c.row === c.col, `cell ${c.row},${c.col} diagonal`);
    if (rowSum) {
      const p = (100 * want) / rowSum;
      assert.equal(c.pct, (p > 0 && p < 1 ? p.toFixed(1) : p.toFixed(0)) + "%", `cell ${c.row},${c.col} row %`);
    } else assert.equal(c.pct, "", `cell ${c.row},${c.col} of an empty row`);
    assert.match(c.title, new RegExp(`→ pages on node ${c.col}: ${want.toLocaleString("en-US")} sampled accesses`));
  }
  // Node 1's worker reads node 0's pages: a remote cell, and the tooltip says so.
  assert.match(cells.find((c) => c.row === 1 && c.col === 0).title, /remote/);
  assert.equal(await page.locator('#profile section[data-page=matrix] table.matrix tr[data-row="-1"] th').textContent(), "unpinned");

  // Threads: one row per thread; a click expands its pinning log.
  await tab(page, "threads");
  const tids = await page.$$eval("#profile table.threads tbody tr[data-tid]", (trs) => trs.map((tr) => +tr.dataset.tid));
  assert.deepEqual(tids, prof.threads.map((th) => th.tid).sort((a, b) => a - b));
  const worker = prof.threads.find((th) => th.nodes.length === 1 && th.nodes[0] === 1);
  await page.click(`#profile table.threads tr[data-tid="${worker.tid}"]`);
  const log = await page.$$eval("#profile table.threads tr.detail table.binding-log tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.equal(log.length, worker.binding_log.length);
  worker.binding_log.forEach((b, i) => {
    assert.equal(log[i][0], b.time_s.toFixed(3));
    assert.equal(log[i][1], b.cpus);
    assert.equal(log[i][2], b.nodes.join(","));
    if (b.via !== undefined) assert.equal(log[i][4], b.via);
  });
  const row = (await page.locator(`#profile table.threads tr[data-tid="${worker.tid}"] td`).allTextContents());
  assert.equal(row[3], "pinned: node 1");
  assert.equal(num(await page.textContent(`#profile table.threads tr[data-tid="${worker.tid}"] td[data-key="remote"]`)), worker.metrics.remote);

  // Functions: sorting by remote puts compute first, rows in order of their remote counts.
  await tab(page, "code");
  await page.click('#profile table.code th[data-key="remote"]');
  const byFn = await page.$$eval("#profile table.code tbody tr", (trs) => trs.map((tr) => ({ fn: tr.dataset.function, remote: tr.querySelector('td[data-key="remote"]').textContent })));
  assert.equal(byFn[0].fn, "compute");
  for (let i = 1; i < byFn.length; i++) assert.ok(num(byFn[i].remote) <= num(byFn[i - 1].remote), `not sorted by remote: ${JSON.stringify(byFn.slice(0, i + 1))}`);
  // Ascending on a second click.
  await page.click('#profile table.code th[data-key="remote"]');
  assert.equal(await page.getAttribute('#profile table.code th[data-key="remote"]', "data-dir"), "asc");
  assert.notEqual(await page.getAttribute("#profile table.code tbody tr:first-child", "data-function"), "compute");
  await page.click('#profile table.code th[data-key="remote"]');
  // Per line, the compute line first, with its metrics.
  await page.check("#pgroup-line");
  const first = page.locator("#profile table.code tbody tr").first();
  assert.equal(await first.getAttribute("data-line"), String(computeLine));
  const loc = prof.locations.find((l) => l.function === "compute" && l.line === computeLine);
  for (const k of METRICS) assert.equal(num(await first.locator(`td[data-key="${k}"]`).textContent()), loc.metrics[k], `compute line ${k}`);
  // The filter keeps what matches.
  await page.fill("#pfilter", "init_buf");
  assert.deepEqual(new Set(await page.$$eval("#profile table.code tbody tr", (trs) => trs.map((tr) => tr.dataset.function))), new Set(["init_buffer"]));
  await page.fill("#pfilter", "");

  // A click opens the source at that line, with the line's metrics beside the code.
  await first.click();
  await page.waitForSelector("#profile table.src tr.target");
  assert.equal(await page.textContent("#profile .psource .srchead h3"), "/data/profnuma.c");
  assert.equal(await page.textContent("#profile .psource .srchead .path"), `read from ${join(srcDir, "profnuma.c")}`);
  const target = page.locator("#profile table.src tr.target");
  assert.equal(await target.getAttribute("data-line"), String(computeLine));
  assert.match(await target.locator("td.code").textContent(), /@compute/);
  for (const k of METRICS) {
    const v = await target.locator(`td[data-metric="${k}"]`).textContent();
    assert.equal(v === "" ? 0 : num(v), loc.metrics[k], `source line ${computeLine} ${k}`);
  }
  // Every line of the file is there, as on disk; the hot lines list starts with the clicked metric's top.
  assert.equal(await page.locator("#profile table.src tbody tr").count(), srcLines.length - (srcLines.at(-1) === "" ? 1 : 0));
  assert.equal(await page.textContent(`#profile table.src tr[data-line="${marked("init")}"] td.code`), srcLines[marked("init") - 1]);
  assert.equal(await page.getAttribute("#profile ol.hot li:first-child a", "data-line"), String(computeLine));
  // Lines without counts are not highlighted; lines with counts are.
  assert.equal(await page.locator("#profile table.src tr.hasdata").count(), new Set(prof.locations.filter((l) => l.file === "/data/profnuma.c").map((l) => l.line)).size);

  // Memory: mappings and (when the profile has them) allocation sites.
  await tab(page, "memory");
  assert.equal(await page.locator("#profile table.mappings tbody tr").count(), prof.mappings.length);
  if (prof.allocations) {
    assert.equal(await page.locator("#profile table.allocations tbody tr").count(), prof.allocations.length);
    const a = prof.allocations.find((x) => x.file);
    await page.click(`#profile table.allocations tr[data-function="${a.function}"][data-line="${a.line}"]`);
    await page.waitForSelector(`#profile table.src tr.target[data-line="${a.line}"]`);
    assert.equal(await page.textContent("#profile .psource .srchead h3"), a.file);
  }

  await tab(page, "summary");
  await page.screenshot({ path: join(artifacts, "profile.png"), fullPage: true });
  await tab(page, "matrix");
  await page.screenshot({ path: join(artifacts, "profile-matrix.png") });
  await tab(page, "code");
  await page.click("#profile table.code tbody tr:first-child");
  await page.waitForSelector("#profile table.src tr.target");
  await page.screenshot({ path: join(artifacts, "profile-source.png") });
  if (process.env.NUMASCOPE_DOCS_IMG) {
    await tab(page, "summary");
    await page.screenshot({ path: join(repo, "docs/img/profile.png") });
  }
});

test("view PROFILE without --source-path: no source is served, and the page says how to ask for it", async (t) => {
  const page = await open(t, []);
  await tab(page, "code");
  await page.check("#pgroup-line");
  await page.click(`#profile table.code tr[data-function="compute"][data-line="${computeLine}"]`);
  const msg = await (await page.waitForSelector("#profile .source-missing")).textContent();
  // Without --source-path nothing is read: not the recorded path, not its compilation directory.
  assert.match(msg, /\/data\/profnuma\.c: no source served: restart view with --source-path DIR/);
  assert.match(await page.locator("#profile .sourcepath").textContent(), /no source served: restart view with --source-path DIR/);
  // The lines with counts are still listed, with their metrics.
  const target = page.locator("#profile table.src tr.target");
  assert.equal(await target.getAttribute("data-line"), String(computeLine));
  const loc = prof.locations.find((l) => l.function === "compute" && l.line === computeLine);
  assert.equal(num(await target.locator('td[data-metric="remote"]').textContent()), loc.metrics.remote);
  // A location without line information says so.
  const noLine = prof.locations.find((l) => !l.file);
  if (noLine) {
    await tab(page, "code");
    await page.click(`#profile table.code tr[data-function="${noLine.function}"]`);
    assert.match(await (await page.waitForSelector("#profile .source-missing")).textContent(), /no line information/);
  }
});

test("a profile loads from disk without a server; source is then unavailable", async (t) => {
  const page = await browser(t);
  await page.goto("file://" + join(repo, "internal/web/dist/index.html"));
  await page.setInputFiles("#file", fixture);
  await page.waitForSelector("#profile .ptabs");
  assert.equal(await page.textContent("#mode"), "profile serial-init-4node.json");
  for (const m of METRICS) assert.equal(num(await page.getAttribute(`#profile table.totals tr[data-metric="${m}"] td[data-value]`, "data-value")), prof.totals[m]);
  assert.match(await page.textContent("#profile p.hints-none"), /numascope view FILE/);
  await tab(page, "matrix");
  assert.equal(await page.locator("#profile section[data-page=matrix] table.matrix td.cell.diag").count(), prof.access_matrix.page_nodes.length);
  await tab(page, "code");
  await page.click("#profile table.code tbody tr:first-child");
  assert.match(await (await page.waitForSelector("#profile .source-missing")).textContent(), /not available for a profile opened from disk/);
});

test("accesses of unknown node are shown beside local and remote: local + remote + unknown = sampled accesses", async (t) => {
  // The real capture with accesses handled after the program exited, as numascope profile writes them
  // (accesses_node_unknown and its note); the capture itself has none (it predates the field).
  assert.equal(prof.accesses_node_unknown ?? 0, 0);
  const unknown = 1234;
  const note = `${unknown} sampled accesses are counted neither local nor remote: numascope, short of CPU, handled them after the program had exited`;
  const file = join(tempDir(t), "unknown.json");
  writeFileSync(file, JSON.stringify({ ...prof, accesses_node_unknown: unknown, notes: [...prof.notes, note] }));
  const { url } = await serve(t, ["view", file, "--listen", "127.0.0.1:0"], repo);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#profile .ptabs");

  const row = (m) => page.locator(`#profile table.totals tr[data-metric="${m}"]`);
  const count = async (m) => num(await row(m).locator("td[data-value]").getAttribute("data-value"));
  const shown = async (m) => num(await row(m).locator("td[data-value]").textContent());
  const { local, remote } = prof.totals;
  const acc = local + remote + unknown;
  assert.equal(await count("accesses_node_unknown"), unknown);
  assert.equal(await shown("accesses_node_unknown"), unknown);
  assert.equal(await count("accesses"), acc);
  assert.equal(await shown("accesses"), acc);
  assert.equal(await count("local") + (await count("remote")) + (await count("accesses_node_unknown")), await count("accesses"));
  assert.equal(await row("accesses").locator("td").first().textContent(), "sampled accesses (local + remote + node unknown)");
  assert.equal(await row("accesses_node_unknown").locator("td").first().textContent(), "node unknown (handled after the exit)");
  // Placed right after remote, with its share of all the sampled accesses; local's and remote's shares are of the same total.
  const order = await page.$$eval("#profile table.totals tbody tr", (trs) => trs.map((tr) => tr.dataset.metric));
  assert.equal(order[order.indexOf("remote") + 1], "accesses_node_unknown");
  const pct = (v) => ((100 * v) / acc).toFixed(0) + "% of sampled accesses";
  assert.equal(await row("accesses_node_unknown").locator("td.share").textContent(), pct(unknown));
  assert.equal(await row("remote").locator("td.share").textContent(), pct(remote));
  assert.ok((await page.locator("#profile ul.notes li").allTextContents()).includes(note));

  // numascope report totals the same sampled accesses.
  const report = execFileSync(binary, ["report", file], { encoding: "utf8" });
  assert.match(report, new RegExp(`\\nsampled accesses +${acc} +\\n`));
  assert.match(report, new RegExp(`\\n  node unknown \\(handled after the exit\\) +${unknown} +`));

  // The matrix has no column for them, and says so under it.
  await tab(page, "matrix");
  const missing = page.locator("#profile section[data-page=matrix] p.unknown-node");
  assert.equal(num(await missing.getAttribute("data-value")), unknown);
  assert.match(await missing.textContent(), /^Not in the matrix: 1,234 sampled accesses of unknown node/);
});

test("a profile with many lines draws the first 1000 rows of a table until asked for all", async (t) => {
  // Synthetic on purpose: the size is what is tested, not the numbers.
  const dir = tempDir(t);
  const locations = Array.from({ length: 1500 }, (_, i) => ({ function: `f${i}`, file: "/src/big.c", line: i + 1, metrics: { first_touch: i, local: 0, remote: 1500 - i } }));
  const file = join(dir, "big.json");
  writeFileSync(file, JSON.stringify({ ...prof, locations }));
  const page = await browser(t);
  await page.goto("file://" + join(repo, "internal/web/dist/index.html"));
  await page.setInputFiles("#file", file);
  await page.waitForSelector("#profile .ptabs");
  await tab(page, "code");
  assert.equal(await page.locator("#profile table.code tbody tr[data-function]").count(), 1000);
  assert.match(await page.textContent("#profile table.code tr.more"), /^500 more rows/);
  // Sorting works on all of them, not only the rows drawn.
  await page.click('#profile table.code th[data-key="first_touch"]');
  assert.equal(await page.getAttribute("#profile table.code tbody tr:first-child", "data-function"), "f1499");
  await page.click("#profile table.code tr.more button");
  assert.equal(await page.locator("#profile table.code tbody tr[data-function]").count(), 1500);
});

test("a big source file is drawn around the line asked for, with buttons for more", async (t) => {
  // Synthetic on purpose: a 10,000-line file, found by its suffix under --source-path.
  const dir = tempDir(t);
  writeFileSync(join(dir, "big.c"), Array.from({ length: 10000 }, (_, i) => `int v${i + 1};`).join("\n") + "\n");
  const locations = [20, 9000].map((line) => ({ function: `f${line}`, file: "/build/big.c", line, metrics: { first_touch: line, local: 0, remote: 1 } }));
  const file = join(dir, "big.json");
  writeFileSync(file, JSON.stringify({ ...prof, locations, allocations: undefined }));
  const { url } = await serve(t, ["view", file, "--listen", "127.0.0.1:0", "--source-path", dir], repo);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#profile .ptabs");
  await tab(page, "code");
  await page.click('#profile table.code tr[data-line="9000"]');
  await page.waitForSelector('#profile table.src tr.target[data-line="9000"]');
  const rows = () => page.locator("#profile table.src tbody tr").count();
  assert.equal(await rows(), 4000);
  assert.equal(await page.textContent('#profile table.src tr[data-line="9000"] td.code'), "int v9000;");
  assert.equal(await page.textContent("#profile .srccode button[data-dir=up]"), "show 4,000 lines above");
  // A hot line outside the window: drawn around it.
  await page.click('#profile ol.hot a[data-line="20"]');
  await page.waitForSelector('#profile table.src tr.target[data-line="20"]');
  assert.equal(await page.locator("#profile .srccode button[data-dir=up]").count(), 0);
  assert.equal(await page.getAttribute("#profile table.src tbody tr:first-child", "data-line"), "1");
  await page.click("#profile .srccode button[data-dir=down]");
  await page.waitForFunction(() => document.querySelectorAll("#profile table.src tbody tr").length === 8000);
});
