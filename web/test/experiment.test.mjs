// End-to-end tests of the experiment page: a real (tiny) experiment run by numascope on a
// captured two-node machine, its report served by `numascope experiment --web` and loaded from
// disk, drawn in headless Chromium. The DOM is checked against numascope's own JSON analysis.
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { repo, artifacts, binary, tempDir, serve, browser, countingRoot } from "./util.mjs";

const twonode = join(repo, "internal/sensor/testdata/twonode");

// Two factors, two replications: 8 runs of a few ms each. a changes the wall time (10 or 40 ms);
// b changes nothing. The fixture gives every run the same per-node MemFree: node 0 3431772160
// bytes, node 1 3628085248; the command adds 1000 × a to its pgfault (countingRoot).
const spec = (bump) => `name = "tiny"
command = "sleep 0.0{a}; sh ${bump} {a}; : {b}"
replications = 2
seed = 3
interval = "5ms"
events = ["node.*.numa_hit", "node.*.MemFree", "vmstat.pgfault"]
responses = ["wall_time", "rate:vmstat.pgfault"]

[[factor]]
name = "a"
levels = [1, 4]

[[factor]]
name = "b"
levels = ["x", "y"]
`;

/** experiment runs the tiny experiment in dir and returns numascope's JSON analysis of it. */
function experiment(dir) {
  const { root, bump } = countingRoot(dir);
  writeFileSync(join(dir, "tiny.toml"), spec(bump));
  const run = (...args) => execFileSync(binary, ["--root", root, "experiment", "tiny.toml", ...args], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  run();
  const json = run("--analyze", "--format", "json");
  writeFileSync(join(dir, "tiny.analysis.json"), json);
  return JSON.parse(json);
}

/** checkResponses asserts that every response's ANOVA table, verdicts, effect bars, QQ and residual points match the analysis. */
async function checkResponses(page, analysis) {
  const sections = await page.$$eval("#report section.response", (ss) => ss.map((s) => s.dataset.response));
  assert.deepEqual(sections, ["wall_time", "rate:vmstat.pgfault"]);
  for (const ra of analysis.responses) {
    const res = ra.anova;
    assert.ok(res, `no ANOVA for ${ra.response}: ${ra.error}`);
    const sec = page.locator(`#report section.response[data-response="${ra.response}"]`);
    const terms = await sec.locator("table.anova tbody tr td:first-child").allTextContents();
    assert.deepEqual(terms, ["a", "b", "a:b", "error", "total"]);
    const pct = await sec.locator("table.anova tbody tr td:last-child").allTextContents();
    assert.deepEqual(pct.slice(0, 3), res.terms.map((t) => `${t.percent_variation.toFixed(1)}%`));
    assert.deepEqual(await sec.locator("ul.verdicts li").allTextContents(), res.verdicts);
    // Effects with confidence intervals as bars: one per level of every term, with its whiskers.
    const effects = await sec.locator("svg.effects g.effect").evaluateAll((gs) =>
      gs.map((g) => {
        const bar = g.querySelector("rect.bar");
        return {
          label: g.querySelector("text.label").textContent,
          significant: g.classList.contains("significant"),
          whiskers: g.querySelectorAll("line.ci").length,
          left: +bar.getAttribute("x"),
          right: +bar.getAttribute("x") + +bar.getAttribute("width"),
          zero: +g.ownerSVGElement.querySelector("line.zero").getAttribute("x1"),
        };
      }),
    );
    const want = res.term_effects.flatMap((te) => te.effects.map((e) => ({ label: `${te.term} = ${e.levels.join(":")}`, e })));
    assert.deepEqual(effects.map((e) => e.label), ["a = 1", "a = 4", "b = x", "b = y", "a:b = 1:x", "a:b = 1:y", "a:b = 4:x", "a:b = 4:y"]);
    assert.deepEqual(effects.map((e) => e.label), want.map((w) => w.label));
    assert.deepEqual(effects.map((e) => e.significant), want.map((w) => w.e.significant));
    for (const [i, e] of effects.entries()) {
      assert.equal(e.whiskers, 3, `${e.label}: the CI has no whiskers`);
      // The bar runs from zero towards the effect's sign.
      const est = want[i].e.estimate;
      if (est > 0) assert.ok(Math.abs(e.left - e.zero) < 0.5 && e.right > e.zero, `${e.label} = ${est}: bar ${e.left}..${e.right}, zero at ${e.zero}`);
      if (est < 0) assert.ok(Math.abs(e.right - e.zero) < 0.5 && e.left < e.zero, `${e.label} = ${est}: bar ${e.left}..${e.right}, zero at ${e.zero}`);
    }
    // The QQ plot: one point per observation, rising left to right as sorted residuals do.
    const qq = await sec.locator("svg.qq circle.point").evaluateAll((cs) => cs.map((c) => [+c.getAttribute("cx"), +c.getAttribute("cy")]));
    assert.equal(qq.length, res.qq.length);
    assert.equal(qq.length, 8);
    for (let i = 1; i < qq.length; i++) assert.ok(qq[i][0] > qq[i - 1][0] && qq[i][1] <= qq[i - 1][1] + 1e-9, `QQ points out of order: ${JSON.stringify(qq)}`);
    assert.equal(await sec.locator("svg.qq line.ref").count(), 1, "no reference line in the QQ plot");
    assert.equal(await sec.locator("svg.residuals circle.point").count(), res.residuals.length);
  }
}

test("experiment --web: effects, boxplots, QQ plot, ANOVA table and verdicts", async (t) => {
  const dir = tempDir(t);
  const analysis = experiment(dir);
  const { url } = await serve(t, ["--root", join(dir, "root"), "experiment", "tiny.toml", "--analyze", "--web", "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t, { width: 1300, height: 900 });
  await page.goto(url);
  await page.waitForSelector("#report section.response");
  assert.equal(await page.textContent("#mode"), "experiment tiny");
  assert.equal(await page.isVisible("#plots"), false, "the time-series view is shown over the report");
  assert.match(await page.textContent("#report p.summary"), /^Factors: a \(1, 4\); b \(x, y\)\. 8 measured runs, 0 warm-up runs left out\./);
  await checkResponses(page, analysis);

  // The per-node distributions: a box per run for MemFree (numa_hit never moved: no plot).
  assert.deepEqual(await page.$$eval("figure.dist", (fs) => fs.map((f) => f.dataset.event)), ["node.MemFree"]);
  const boxes = await page.$$eval('svg.boxplot[data-event="node.MemFree"] g.box', (gs) =>
    gs.map((g) => ({
      label: g.dataset.label,
      maxNode: g.dataset.maxNode,
      nodes: [...g.querySelectorAll("circle.node")].map((c) => c.dataset.node),
      iqr: g.querySelectorAll("rect.iqr").length,
      median: g.querySelectorAll("line.median").length,
    })),
  );
  assert.deepEqual(
    boxes.map((b) => b.label),
    ["a=1 b=x #1", "a=1 b=x #2", "a=1 b=y #1", "a=1 b=y #2", "a=4 b=x #1", "a=4 b=x #2", "a=4 b=y #1", "a=4 b=y #2"],
  );
  for (const b of boxes) {
    assert.deepEqual([b.maxNode, b.nodes, b.iqr, b.median], ["1", ["0", "1"], 1, 1], `box ${JSON.stringify(b)}`);
  }
  // The box spans the two nodes' values: whiskers from node 0's to node 1's MemFree.
  const span = await page.$eval('svg.boxplot g.box circle.node[data-node="0"]', (c) => c.querySelector("title").textContent);
  assert.equal(span, "node 0: 3.432e+9");
  await page.screenshot({ path: join(artifacts, "experiment.png"), fullPage: true });
});

test("an experiment's JSON analysis loads from disk without a server", async (t) => {
  const dir = tempDir(t);
  const analysis = experiment(dir);
  const page = await browser(t);
  await page.goto("file://" + join(repo, "internal/web/dist/index.html"));
  await page.setInputFiles("#file", join(dir, "tiny.analysis.json"));
  await page.waitForSelector("#report section.response");
  assert.equal(await page.textContent("#mode"), "experiment tiny");
  await checkResponses(page, analysis);
  // --format json has no runs: no per-run boxes, and the page says why.
  assert.equal(await page.locator("svg.boxplot").count(), 0);
  await page.waitForSelector("section.distributions p.none");
  // Loading a recording afterwards leaves the report.
  const rec = join(dir, "r.jsonl");
  execFileSync(binary, ["record", "--root", twonode, "-o", rec, "-n", "5", "-i", "10ms", "--ctl", join(dir, "ctl")], { stdio: "pipe" });
  await page.setInputFiles("#file", rec);
  await page.waitForSelector("#mode:has-text('file r.jsonl')");
  assert.equal(await page.isVisible("#report"), false);
  assert.equal(await page.evaluate(() => window.__numascope.rows()), 5);
});

test("an analysis of 150,000 runs draws its QQ and residual plots (Math.min(...v) over one point per run threw RangeError past about 120,000)", async (t) => {
  const dir = tempDir(t);
  const analysis = experiment(dir);
  const n = 150000;
  const res = analysis.responses[0].anova;
  // Residuals of a million-run experiment, in shape: one point per run, spread round 0.
  res.qq = Array.from({ length: n }, (_, k) => ({ normal: -4 + (8 * k) / n, residual: Math.sin(k) }));
  res.residuals = Array.from({ length: n }, (_, k) => ({ levels: ["1", "x"], predicted: 10 + (k % 7), residual: Math.cos(k) }));
  const file = join(dir, "big.analysis.json");
  writeFileSync(file, JSON.stringify(analysis));
  const page = await browser(t);
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto("file://" + join(repo, "internal/web/dist/index.html"));
  await page.setInputFiles("#file", file);
  await page.waitForSelector("#report section.response", { timeout: 120000 });
  assert.deepEqual(errors, []);
  const sec = page.locator(`#report section.response[data-response="${analysis.responses[0].response}"]`);
  assert.equal(await sec.locator("svg.qq circle.point").count(), n);
  assert.equal(await sec.locator("svg.residuals circle.point").count(), n);
});

test("experiment page: long effect and run labels are not clipped, and wall_time has its unit", async (t) => {
  const dir = tempDir(t);
  // Long factor and level names: the interaction's label is "policy:mb = first-touch:4".
  const { root, bump } = countingRoot(dir);
  writeFileSync(
    join(dir, "long.toml"),
    spec(bump).replace('name = "tiny"', 'name = "long"').replaceAll("{a}", "{mb}").replace("{b}", "{policy}").replace('name = "a"', 'name = "mb"').replace('name = "b"\nlevels = ["x", "y"]', 'name = "policy"\nlevels = ["first-touch", "interleave"]'),
  );
  execFileSync(binary, ["--root", root, "experiment", "long.toml"], { cwd: dir, stdio: "pipe" });
  const { url } = await serve(t, ["--root", root, "experiment", "long.toml", "--analyze", "--web", "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t, { width: 1300, height: 900 });
  await page.goto(url);
  await page.waitForSelector("#report section.response");
  assert.deepEqual(await page.$$eval("#report section.response h3", (hs) => hs.map((h) => h.textContent)), ["wall_time (s)", "rate:vmstat.pgfault (/s)"]);
  const labels = await page.$$eval("#report svg.chart text.label", (ts) => ts.map((e) => e.textContent));
  assert.ok(labels.includes("mb:policy = 4:first-touch") && labels.includes("mb=1 policy=first-touch #1"), `labels ${JSON.stringify(labels)}`);
  // Every label, tick and axis title lies inside its chart: nothing is cut at its edges.
  const cut = await page.$$eval("#report svg.chart text", (ts) =>
    ts.flatMap((e) => {
      const r = e.getBoundingClientRect(),
        s = e.ownerSVGElement.getBoundingClientRect();
      return r.left < s.left - 0.5 || r.right > s.right + 0.5 || r.top < s.top - 0.5 || r.bottom > s.bottom + 0.5 ? [`"${e.textContent}" [${r.left}, ${r.right}] × [${r.top}, ${r.bottom}] outside [${s.left}, ${s.right}] × [${s.top}, ${s.bottom}]`] : [];
    }),
  );
  assert.deepEqual(cut, []);
  await page.screenshot({ path: join(artifacts, "experiment-long.png"), fullPage: true });
});
