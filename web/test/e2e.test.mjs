// End-to-end tests of the web client in real headless Chromium against a
// real numascope binary (bin/numascope; run scripts/web-test).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, copyFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { repo, artifacts, binary, tempDir, serve, browser } from "./util.mjs";

// A real capture of a two-node machine's /sys and /proc.
const twonode = join(repo, "internal/sensor/testdata/twonode");
const legacy = join(repo, "internal/recording/testdata/legacy-numaconnect2.json");
const sampleCount = (page) => page.evaluate(() => window.__numascope.samples.received);

/** totalsRows reads the totals table's cells. */
const totalsRows = (page) => page.$$eval("#totals tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
/** totalOf is the mean in the totals table's data for the row named name. */
const totalOf = (page, name) => page.evaluate((n) => window.__numascope.totals().find((r) => r.name === n)?.mean, name);

/** dropFile drops bytes on the page as a file named name, as a desktop drag and drop does. */
async function dropFile(page, name, bytes) {
  await page.evaluate(
    ([name, b64]) => {
      const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bin], name));
      document.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
    },
    [name, Buffer.from(bytes).toString("base64")],
  );
}

/**
 * convertCSV reads a recording with `numascope convert` (Go, klauspost/compress: a decoder
 * independent of the browser's) and returns its column names and rows of numbers.
 */
function convertCSV(file) {
  const out = execFileSync(binary, ["convert", file], { encoding: "utf8", maxBuffer: 1 << 26, stdio: ["ignore", "pipe", "pipe"] });
  const lines = out.trim().split("\n");
  return { cols: lines[0].split(",").slice(1), rows: lines.slice(1).map((l) => l.split(",").map((v) => (v === "" ? NaN : Number(v)))) }; // an empty cell is unknown (null), not 0
}


test("live on this machine: values update and hovering shows them", async (t) => {
  const dir = tempDir(t);
  const { url } = await serve(
    t,
    ["live", "--listen", "127.0.0.1:0", "-i", "20ms", "--batch", "100ms", "--sampler-node", "none", "--ctl", join(dir, "ctl"), "-e", "cpu.*,vmstat.pgfault,node.MemFree"],
    dir,
  );
  const page = await browser(t);
  await page.goto(url);
  await page.waitForFunction(() => window.__numascope.samples.received >= 20);
  const s1 = await page.textContent("#status");
  await page.waitForFunction((n) => window.__numascope.samples.received > n + 10, await sampleCount(page));
  assert.notEqual(await page.textContent("#status"), s1, "the status line did not change");
  // The machine is busy (this test runs a browser): CPU time and page faults vary.
  const distinct = await page.evaluate(() => {
    const s = window.__numascope.samples.store;
    const i = s.index.get("vmstat.pgfault");
    return new Set(Array.from(s.v[i].subarray(0, s.n))).size;
  });
  assert.ok(distinct > 1, `vmstat.pgfault took ${distinct} distinct values`);
  // Hovering the plot shows exact values in the legend.
  const box = await page.locator(".u-over").first().boundingBox();
  await page.mouse.move(box.x + box.width - 5, box.y + box.height / 2);
  const v = await page.locator('.u-legend .u-series:has-text("vmstat.pgfault") .u-value').textContent();
  assert.match(v, /^\d/, `hover value ${v}`);
});

test("live: values update, events toggle, per-node view, labels reach the recording", async (t) => {
  const dir = tempDir(t);
  const { url } = await serve(
    t,
    ["live", "--root", twonode, "--listen", "127.0.0.1:0", "-i", "50ms", "--batch", "100ms", "--ctl", join(dir, "ctl")],
    dir,
  );
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('live')");
  assert.equal(await page.isVisible("#pause"), true, "live controls hidden");
  await page.waitForFunction(() => window.__numascope.samples.received > 0);

  // Values update: the sample count in the status line grows, and so does the data.
  const status1 = await page.textContent("#status");
  const n1 = await sampleCount(page);
  await page.waitForFunction((n) => window.__numascope.samples.received > n + 5, n1);
  const status2 = await page.textContent("#status");
  assert.notEqual(status1, status2, "the status line did not change");
  assert.match(status2, /^\d+ samples · 12 columns/);
  const legend = await page.$$eval(".u-legend .u-series th", (els) => els.map((e) => e.textContent));
  assert.ok(legend.some((l) => l.includes("node.numa_hit")), `legend ${legend}`);

  // The interval set from the page reaches the server (and every client).
  await page.fill("#interval", "100ms");
  await page.click("#interval-set");
  await page.waitForFunction(() => window.__numascope.samples.session.interval_s === 0.1);
  await page.waitForSelector("#status:has-text('interval 0.100 s')");
  // Pause and resume.
  await page.click("#pause");
  await page.waitForSelector("#pause:has-text('resume')");
  await page.click("#pause");
  await page.waitForSelector("#pause:has-text('pause')");

  // Toggle an event off in the picker: the server restarts sampling without it.
  await page.uncheck('input[data-event="node.numa_miss"]');
  await page.waitForFunction(() => !window.__numascope.visible().flatMap((g) => g.series).some((s) => s.label.startsWith("node.numa_miss")));
  const cols = await page.evaluate(() => window.__numascope.samples.store.cur.map((i) => window.__numascope.samples.store.cols[i].name));
  assert.ok(!cols.includes("node.numa_miss") && cols.includes("node.numa_hit"), `columns ${cols}`);
  // ...and back on.
  await page.check('input[data-event="node.numa_miss"]');
  await page.waitForFunction(() => window.__numascope.visible().flatMap((g) => g.series).some((s) => s.label.startsWith("node.numa_miss")));

  // Clicking a legend entry hides that trace.
  await page.click('.u-legend .u-series:has-text("node.numa_hit")');
  const shown = await page.evaluate(() => window.__numascope.visible().flatMap((g) => g.series).find((s) => s.label.startsWith("node.numa_hit")).show);
  assert.equal(shown, false);
  await page.click('.u-legend .u-series:has-text("node.numa_hit")');

  // Per-node view: small multiples per node (and unit), on the same y axis.
  await page.check("#view-pernode");
  await page.waitForSelector('.card[data-group="node 0"]');
  await page.waitForSelector('.card[data-group="node 1"]');
  const groups = await page.evaluate(() => window.__numascope.visible().map((g) => g.group));
  assert.deepEqual([...new Set(groups.filter((g) => g.startsWith("node")))], ["node 0", "node 1"]);
  await page.waitForFunction((n) => window.__numascope.samples.received > n, await sampleCount(page));

  // Record from the page, add a label, stop: the label is in the file.
  await page.fill("#record-path", "e2e.jsonl");
  await page.click("#record");
  await page.waitForSelector("#record.on");
  await page.fill("#label-text", "from the browser");
  await page.click("#label-add");
  await page.waitForSelector('#labels li:has-text("from the browser")');
  await page.waitForFunction((n) => window.__numascope.samples.received > n + 3, await sampleCount(page));
  await page.screenshot({ path: join(artifacts, "live.png") });
  await page.click("#record");
  await page.waitForSelector("#record:not(.on)");
  const lines = readFileSync(join(dir, "e2e.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(lines[0].type, "header");
  const label = lines.find((l) => l.type === "label");
  assert.equal(label?.text, "from the browser");
  assert.ok(lines.filter(Array.isArray).length >= 3, "too few samples recorded");
  assert.equal(lines.at(-1).type, "end");
});

test("view: a recording opens with plots, labels and totals", async (t) => {
  const dir = tempDir(t);
  const rec = join(dir, "r.jsonl.zst");
  execFileSync(binary, ["record", "--root", twonode, "-o", rec, "-n", "40", "-i", "10ms", "--discrete", "--ctl", join(dir, "ctl")], { stdio: "pipe" });
  const { url } = await serve(t, ["view", rec, "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('recording')");
  assert.equal(await page.isVisible("#pause"), false, "live controls shown for a recording");
  await page.waitForFunction(() => window.__numascope.samples.store.n > 0);
  // Summed view: the totals are those of the summed traces, computed by the server at full
  // resolution: one row per event over all nodes, none of the per-node columns.
  await page.waitForSelector('#totals tbody tr:has-text("node.numa_hit")');
  const summed = await totalsRows(page);
  assert.ok(!summed.some((r) => /^node\.\d\./.test(r[0])), `per-node columns in the summed totals: ${JSON.stringify(summed)}`);
  const hit = summed.find((r) => r[0] === "node.numa_hit");
  assert.deepEqual([hit?.[1], hit?.[3]], ["all", "40"], `totals ${JSON.stringify(summed)}`);
  // MemFree is a gauge: node 0 has 3431772160 bytes free and node 1 3628085248 in the capture.
  assert.equal(await totalOf(page, "node.MemFree"), 3431772160 + 3628085248);
  assert.equal(summed.length, await page.evaluate(() => window.__numascope.visible().flatMap((g) => g.series).length), "one totals row per trace");
  // Summed view sums the per-node columns of this --discrete recording.
  const legend = await page.$$eval(".u-legend .u-series th", (els) => els.map((e) => e.textContent));
  assert.ok(legend.some((l) => l.includes("node.numa_hit (Σ nodes)")), `legend ${legend}`);
  await page.check("#view-pernode");
  await page.waitForSelector('.card[data-group="node 1"]');
  // Per node: the totals are per column again.
  await page.waitForSelector('#totals tbody tr:has-text("node.0.numa_hit")');
  const rows = await totalsRows(page);
  const hit0 = rows.find((r) => r[0] === "node.0.numa_hit");
  assert.equal(hit0[1], "0");
  assert.equal(Number(hit0[3]), 40, "the totals cover all 40 samples");
  assert.ok(!rows.some((r) => r[0] === "node.numa_hit"), "a summed row in the per-node totals");
  assert.equal(await totalOf(page, "node.1.MemFree"), 3628085248);
  await page.screenshot({ path: join(artifacts, "view.png") });
});

test("a NUMAscope-format JSON file loads from disk without a server", async (t) => {
  const page = await browser(t);
  await page.goto("file://" + join(repo, "internal/web/dist/index.html"));
  await page.setInputFiles("#file", legacy);
  await page.waitForSelector("#mode:has-text('NUMAscope format')");
  const cols = await page.evaluate(() => window.__numascope.columns());
  assert.deepEqual(cols, [
    "numaconnect2.0.RdBlkMod_commands_sent",
    "numaconnect2.1.RdBlkMod_commands_sent",
    "numaconnect2.0.wait_cycles_for_requests_from_PIU_to_RMPE",
    "numaconnect2.1.wait_cycles_for_requests_from_PIU_to_RMPE",
  ]);
  assert.equal(await page.evaluate(() => window.__numascope.rows()), 4);
  await page.waitForSelector('#labels li:has-text("phase 2")');
  // "%" columns become percentages of the recorded rate: 50e6 of 200e6 is 25%.
  const pct = await page.evaluate(() => window.__numascope.samples.store.v[2][0]);
  assert.equal(pct, 25);
  // Summed view: the totals list the two events summed over the two sources, not the four columns.
  const summed = await totalsRows(page);
  assert.deepEqual(summed.map((r) => [r[0], r[1], r[3]]), [
    ["numaconnect2.RdBlkMod_commands_sent", "all", "4"],
    ["numaconnect2.wait_cycles_for_requests_from_PIU_to_RMPE", "all", "4"],
  ]);
  // The max of a sum is the largest sum at one instant.
  const [got, want] = await page.evaluate(() => {
    const s = window.__numascope.samples.store;
    let mx = -Infinity;
    for (let k = 0; k < s.n; k++) mx = Math.max(mx, s.v[0][k] + s.v[1][k]);
    return [window.__numascope.totals()[0].max, mx];
  });
  assert.equal(got, want);
  await page.check("#view-pernode");
  await page.waitForFunction(() => document.querySelectorAll("#totals tbody tr").length === 4);
  assert.ok(existsSync(legacy));
});

test("a JSON Lines recording dropped on the page loads without a server", async (t) => {
  const dir = tempDir(t);
  const plain = join(dir, "r.jsonl");
  execFileSync(binary, ["record", "--root", twonode, "-o", plain, "-n", "25", "-i", "10ms", "--ctl", join(dir, "ctl")], { stdio: "pipe" });
  const page = await browser(t);
  await page.goto("file://" + join(repo, "internal/web/dist/index.html"));
  // Drag and drop, as a user drops a file from the desktop.
  await dropFile(page, "r.jsonl", readFileSync(plain));
  await page.waitForSelector("#mode:has-text('file r.jsonl')");
  assert.equal(await page.evaluate(() => window.__numascope.rows()), 25);
  const cols = await page.evaluate(() => window.__numascope.columns());
  assert.ok(cols.includes("node.numa_hit") && cols.includes("cpu.user"), `columns ${cols}`);
});

test("a .jsonl.zst recording loads from disk without a server, also when it is cut off mid-frame", async (t) => {
  const dir = tempDir(t);
  const zst = join(dir, "r.jsonl.zst");
  execFileSync(binary, ["record", "--root", twonode, "-o", zst, "-n", "400", "-i", "2ms", "--discrete", "--ctl", join(dir, "ctl")], { stdio: "pipe" });
  const { cols: refCols, rows: refRows } = convertCSV(zst);
  assert.equal(refRows.length, 400);

  const page = await browser(t);
  await page.goto("file://" + join(repo, "internal/web/dist/index.html"));
  // The file picker.
  await page.setInputFiles("#file", zst);
  await page.waitForSelector("#mode:has-text('file r.jsonl.zst')");
  assert.equal(await page.isHidden("#error"), true, `error shown: ${await page.textContent("#error")}`);
  assert.equal(await page.evaluate(() => window.__numascope.rows()), 400);
  assert.deepEqual(await page.evaluate(() => window.__numascope.columns()), refCols);
  const last = await page.evaluate(() => {
    const s = window.__numascope.samples.store;
    return [s.t[s.n - 1], ...s.v.map((col) => col[s.n - 1])];
  });
  assert.deepEqual(last, refRows.at(-1), "the last sample differs from numascope convert's");
  assert.match(await page.textContent("#status"), /^400 samples · 20 columns/);
  // The totals table lists the summed columns of this --discrete recording, computed in the page.
  await page.waitForSelector("#totals tbody tr");
  const summed = await totalsRows(page);
  assert.ok(!summed.some((r) => /^node\.\d\./.test(r[0])), `per-node columns in the summed totals: ${JSON.stringify(summed)}`);
  const hit = summed.find((r) => r[0] === "node.numa_hit");
  assert.deepEqual([hit?.[1], hit?.[3]], ["all", "400"], `totals ${JSON.stringify(summed)}`);
  assert.equal(await totalOf(page, "node.MemFree"), 3431772160 + 3628085248);

  // Cut off mid-frame, like a recording being written or a recorder that was killed:
  // what decoded is kept, and the page says the file ends early.
  const bytes = readFileSync(zst);
  const cut = bytes.subarray(0, Math.floor(bytes.length * 0.7));
  writeFileSync(join(dir, "cut.jsonl.zst"), cut);
  await dropFile(page, "cut.jsonl.zst", cut);
  await page.waitForSelector("#mode:has-text('file cut.jsonl.zst')");
  await page.waitForSelector("#error:has-text('ends early')");
  const n = await page.evaluate(() => window.__numascope.rows());
  assert.ok(n > 0 && n < 400, `${n} samples from the cut-off file`);
  // The samples kept are the recording's first n, value for value, and exactly what
  // numascope convert recovers from the same cut-off file.
  const got = await page.evaluate(() => {
    const s = window.__numascope.samples.store;
    return Array.from({ length: s.n }, (_, k) => [s.t[k], ...s.v.map((col) => col[k])]);
  });
  assert.deepEqual(got, refRows.slice(0, n));
  assert.equal(n, convertCSV(join(dir, "cut.jsonl.zst")).rows.length, "numascope convert recovers a different number of samples");
  await page.screenshot({ path: join(artifacts, "zstd-file.png") });

  // A file cut off before its first whole block gets a clear error, and the loaded data stays.
  await dropFile(page, "tiny.jsonl.zst", bytes.subarray(0, 20));
  await page.waitForSelector("#error:has-text('cut off before its first whole block')");
  assert.equal(await page.evaluate(() => window.__numascope.rows()), n);
});
