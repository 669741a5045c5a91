// The time-series plots are readable at a glance (issue 31): one unit per plot, with the unit
// on its y axis; colours in one plot at least CIE76 ΔE 20 apart; "% of max" offered only for
// events with a known maximum; "per node" on a summed recording says what to do; no label
// clipped. Real recordings of a captured two-node machine, served by bin/numascope, in
// headless Chromium. The units expected come from the recording's header, and ΔE is computed
// here from the colours the legend shows, not with the client's code.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { repo, artifacts, binary, tempDir, serve, browser } from "./util.mjs";

const twonode = join(repo, "internal/sensor/testdata/twonode");

/** record makes a plain JSON Lines recording of the captured machine and returns its path and header. */
function record(dir, name, ...args) {
  const f = join(dir, name);
  execFileSync(binary, ["record", "--root", twonode, "-o", f, "-n", "20", "-i", "10ms", "--ctl", join(dir, "ctl"), ...args], { stdio: "pipe" });
  return { file: f, header: JSON.parse(readFileSync(f, "utf8").split("\n")[0]) };
}

async function open(t, dir, file) {
  const { url } = await serve(t, ["view", file, "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('recording')");
  await page.waitForSelector("#totals tbody tr");
  return page;
}

/** wantUnit is the unit an event's values are plotted in, from the header: rates of counters per second. */
function wantUnits(header) {
  const m = new Map();
  for (const c of header.columns) {
    const key = `${c.sensor}.${c.event}`;
    m.set(key, c.unit === "%" ? "%" : c.kind === "counter" ? `${c.unit || "events"}/s` : c.unit || "value");
  }
  return m;
}

/** CIE76 ΔE of two CSS rgb() colours, through sRGB → XYZ (D65) → CIELAB. */
function deltaE(a, b) {
  const lab = (css) => {
    const [r, g, bl] = css.match(/\d+(\.\d+)?/g).slice(0, 3).map((x) => {
      const c = Number(x) / 255;
      return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    const f = (t) => (t > 216 / 24389 ? Math.cbrt(t) : ((24389 / 27) * t + 16) / 116);
    const X = f((0.4124 * r + 0.3576 * g + 0.1805 * bl) / 0.95047);
    const Y = f(0.2126 * r + 0.7152 * g + 0.0722 * bl);
    const Z = f((0.0193 * r + 0.1192 * g + 0.9505 * bl) / 1.08883);
    return [116 * Y - 16, 500 * (X - Y), 200 * (Y - Z)];
  };
  const p = lab(a),
    q = lab(b);
  return Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]);
}

/** plots reads each plot as drawn: its y axis' label, and per series its label and the colour its legend marker shows. */
function plots(page) {
  return page.evaluate(() =>
    window.__numascope.boxes().map((p) => ({
      group: p.card.dataset.group,
      axis: String(p.u.axes[1].label ?? ""),
      right: p.u.axes.length > 2,
      series: [...p.card.querySelectorAll(".u-legend .u-series")].slice(1).map((tr) => ({
        label: tr.querySelector(".u-label").textContent,
        color: getComputedStyle(tr.querySelector(".u-marker")).borderColor,
      })),
    })),
  );
}

/** checkPlots asserts that no plot mixes units and that its colours are ΔE 20 apart. */
async function checkPlots(page, header) {
  const units = wantUnits(header);
  const ps = await plots(page);
  assert.ok(ps.length > 1, `${ps.length} plots`);
  for (const p of ps) {
    const us = new Set(p.series.map((s) => units.get(s.label.replace(/ \(Σ nodes\)$/, ""))));
    assert.deepEqual([...us], [p.axis], `plot ${p.group} "${p.axis}" mixes units: ${JSON.stringify(p.series.map((s) => s.label))}`);
    assert.equal(p.right, false, `plot ${p.group} "${p.axis}" has a second y axis`);
    for (const [i, a] of p.series.entries())
      for (const b of p.series.slice(i + 1)) {
        const d = deltaE(a.color, b.color);
        assert.ok(d >= 20, `plot ${p.group} "${p.axis}": ${a.label} (${a.color}) and ${b.label} (${b.color}) are ΔE ${d.toFixed(1)} apart`);
      }
  }
  return ps;
}

/** checkNotClipped asserts that every y tick label fits its axis, and that no title or legend label is cut. */
async function checkNotClipped(page) {
  const bad = await page.evaluate(() => {
    const out = [];
    const ctx = document.createElement("canvas").getContext("2d");
    for (const p of window.__numascope.boxes()) {
      const ax = p.u.axes[1];
      ctx.font = ax.font[0];
      const w = Math.max(...(ax._values ?? []).map((v) => ctx.measureText(v).width / devicePixelRatio));
      if (w + ax.ticks.size + ax.gap > ax._size) out.push(`${p.card.dataset.group} ${ax.label}: a tick ${w}px wide in an axis of ${ax._size}px`);
    }
    for (const e of document.querySelectorAll("#plots .card h3, #plots .u-legend th, #plots .u-legend td"))
      if (e.scrollWidth > e.clientWidth + 1) out.push(`"${e.textContent}" is cut (${e.scrollWidth} > ${e.clientWidth})`);
    for (const e of document.querySelectorAll("#plots .card"))
      if (e.scrollWidth > e.clientWidth + 1) out.push(`card ${e.dataset.group} overflows (${e.scrollWidth} > ${e.clientWidth})`);
    return out;
  });
  assert.deepEqual(bad, []);
}

test("one unit per plot, colours ΔE 20 apart, labels not clipped: summed and per node", async (t) => {
  const dir = tempDir(t);
  const { file, header } = record(dir, "r.jsonl", "--discrete");
  const page = await open(t, dir, file);
  let ps = await checkPlots(page, header);
  // The default events: bytes (MemFree) and pages/s apart, each axis named.
  const axes = ps.map((p) => p.axis);
  for (const u of ["bytes", "pages/s", "%"]) assert.ok(axes.includes(u), `no ${u} plot: ${axes}`);
  // Bytes in binary prefixes: the two nodes' 7 GB free read as GiB.
  const ticks = await page.evaluate(() => window.__numascope.boxes().find((p) => p.group.unit === "bytes").u.axes[1]._values);
  assert.ok(ticks.some((v) => / GiB$/.test(v)), `bytes ticks ${ticks}`);
  await checkNotClipped(page);
  // The plots share the cursor: hovering the first shows the same time on every plot.
  const box = await page.locator("#plots .u-over").first().boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  const idx = await page.evaluate(() => window.__numascope.boxes().map((p) => p.u.cursor.idx));
  assert.ok(idx.length > 1 && idx.every((i) => i !== null && i !== undefined && i === idx[0]), `cursor indices ${idx}`);
  await page.check("#view-pernode");
  await page.waitForSelector('.card[data-group="node 1"]');
  ps = await checkPlots(page, header);
  assert.ok(ps.some((p) => p.group === "node 0" && p.axis === "bytes") && ps.some((p) => p.group === "node 1" && p.axis === "pages/s"), JSON.stringify(ps.map((p) => [p.group, p.axis])));
  await checkNotClipped(page);
  await page.screenshot({ path: join(artifacts, "plots-pernode.png") });
});

test("a plot with more events of one unit than its colours can tell apart is split", async (t) => {
  const dir = tempDir(t);
  // Every vmstat counter in pages: dozens of one unit.
  const { file, header } = record(dir, "r.jsonl", "-e", "vmstat.*");
  const page = await open(t, dir, file);
  const ps = await checkPlots(page, header);
  const pages = ps.filter((p) => p.axis === "pages/s");
  assert.ok(pages.length > 1, `${pages.length} pages/s plots`);
  assert.equal(new Set(ps.flatMap((p) => p.series.map((s) => s.label))).size, ps.flatMap((p) => p.series).length, "an event plotted twice");
  await checkNotClipped(page);
});

test("% of max: hidden without an event with a maximum, and then its own plot", async (t) => {
  const dir = tempDir(t);
  // The defaults: no event has a maximum (cpu.* are percentages already).
  const plain = record(dir, "plain.jsonl");
  let page = await open(t, dir, plain.file);
  assert.equal(await page.isVisible("#pct"), false, "% of max offered without an event with a maximum");
  assert.ok(!(await plots(page)).some((p) => p.axis.includes("max")), "an axis says % of max");
  // cpu.ticks has a maximum (the ticks a second of the CPUs).
  const ticks = record(dir, "ticks.jsonl", "-e", "cpu.ticks,node.numa_hit");
  assert.ok(ticks.header.columns.find((c) => c.event === "ticks").max > 0, "cpu.ticks has no maximum");
  page = await open(t, dir, ticks.file);
  assert.equal(await page.isVisible("#pct"), true, "% of max hidden although cpu.ticks has a maximum");
  let ps = await plots(page);
  assert.deepEqual(ps.map((p) => p.axis).sort(), ["pages/s", "ticks/s"]);
  await page.check("#pct");
  await page.waitForFunction(() => window.__numascope.visible().some((g) => g.axis === "% of max"));
  ps = await plots(page);
  const pct = ps.filter((p) => p.axis === "% of max");
  assert.deepEqual(pct.flatMap((p) => p.series.map((s) => s.label)), ["cpu.ticks"]);
  assert.ok(!ps.some((p) => p.axis === "ticks/s"), "cpu.ticks still plotted in ticks/s");
  // Its values are the share of the maximum: within 0-100.
  const [mn, mx] = await page.evaluate(() => {
    const s = window.__numascope.boxes().find((p) => p.group.unit === "% of max").u.data[1].filter((v) => v !== null);
    return [Math.min(...s), Math.max(...s)];
  });
  assert.ok(mn >= 0 && mx <= 100.5, `% of max from ${mn} to ${mx}`);
});

test("per node on a summed recording says to record with --discrete", async (t) => {
  const dir = tempDir(t);
  const { file } = record(dir, "summed.jsonl");
  const page = await open(t, dir, file);
  await page.check("#view-pernode");
  await page.waitForSelector("#plots .card h3");
  const titles = await page.$$eval("#plots .card h3", (hs) => hs.map((h) => h.textContent));
  assert.ok(titles.length > 0 && titles.every((h) => h.includes("--discrete")), `titles ${JSON.stringify(titles)}`);
  await checkNotClipped(page);
});
