// End-to-end tests of the bench page: `numascope view bench.json` on the synthetic 2 × 3 document
// of testdata/bench/view (node 2 CPU-less, the pair 1 -> 2 not measured, topology, rated values
// and a loaded section, the pair 1 -> 2 without a curve), on what `numascope bench` writes on this
// machine (loaded latency included), and a document opened from disk without topology, rated values
// or loaded latency. Every cell is checked against the JSON.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { repo, artifacts, binary, tempDir, serve, browser } from "./util.mjs";

const dist = "file://" + join(repo, "internal/web/dist/index.html");
const fixture = join(repo, "testdata/bench/view/2x3-loaded.json"); // README.md there
const doc = JSON.parse(readFileSync(fixture, "utf8"));
const KINDS = { latency: "latency_ns", bandwidth: "bandwidth_mbs" };
const RATED = { latency: "read_latency_ns", bandwidth: "read_bandwidth_mbs" };

/** cells are a heatmap's cells as the page has them, in document order. */
const cells = (page, kind) =>
  page.$$eval(`#bench table.bmatrix[data-kind=${kind}] td.cell`, (tds) =>
    tds.map((td) => ({ row: td.dataset.row, col: td.dataset.col, value: td.dataset.value, min: td.dataset.min, max: td.dataset.max, rated: td.dataset.rated, reason: td.dataset.reason, text: td.querySelector(".v").textContent, dist: td.querySelector(".dist")?.textContent, title: td.title })),
  );

/** checkLoaded asserts that the loaded-latency plot has a series per pair of doc with a curve, each with the JSON's points, and lists every other pair with its reason. */
async function checkLoaded(page, doc) {
  const pairs = doc.loaded.pairs.filter((p) => p.latency_ns !== null);
  const missing = doc.loaded.pairs.filter((p) => p.latency_ns === null);
  assert.equal(await page.locator("#bench .loaded-missing li").count(), missing.length);
  for (const p of missing) {
    const li = await page.textContent(`#bench .loaded-missing li[data-pair="${p.initiator}-${p.target}"]`);
    assert.equal(li, `node ${p.initiator} → node ${p.target}: no curve: ${p.reason}`);
  }
  if (!pairs.length) {
    assert.equal(await page.locator("#bench .loaded-plot").count(), 0);
    assert.match(await page.textContent("#bench .bloaded"), /No pair of this document has a loaded-latency curve/);
    return;
  }
  await page.waitForSelector("#bench .loaded-plot canvas");
  const plot = await page.evaluate(() => {
    const u = window.__numascope.benchPlot();
    return { labels: u.series.map((s) => s.label), data: u.data.map((col) => [...col]) };
  });
  assert.deepEqual(plot.labels.slice(1), pairs.map((p) => `node ${p.initiator} → node ${p.target}`));
  pairs.forEach((p, k) => {
    const pts = plot.data[0].map((x, j) => [x, plot.data[k + 1][j]]).filter(([, y]) => y !== null && y !== undefined);
    const want = p.bandwidth_mbs.map((b, j) => [b, p.latency_ns[j]]).sort((a, b) => a[0] - b[0]);
    assert.deepEqual(pts, want, `loaded ${p.initiator} -> ${p.target}`);
  });
  const legend = await page.locator("#bench .loaded-plot .u-legend").innerText();
  for (const p of pairs) assert.ok(legend.includes(`node ${p.initiator} → node ${p.target}`), legend);
}

/** checkShape asserts that a heatmap has a cell per initiator and target, each holding the JSON's value. */
async function checkShape(page, kind, m) {
  const got = await cells(page, kind);
  assert.equal(got.length, m.initiators.length * m.targets.length, `${kind}: cells = initiators × targets`);
  m.initiators.forEach((i, r) =>
    m.targets.forEach((t, c) => {
      const cell = got[r * m.targets.length + c];
      assert.equal(cell.row, String(i));
      assert.equal(cell.col, String(t));
      assert.equal(cell.value, m.matrix[r][c] === null ? "null" : String(m.matrix[r][c]), `${kind} ${i} -> ${t}`);
    }),
  );
  const rows = await page.$$eval(`#bench table.bmatrix[data-kind=${kind}] tbody tr`, (trs) => trs.length);
  const cols = await page.$$eval(`#bench table.bmatrix[data-kind=${kind}] thead th[data-col]`, (ths) => ths.map((th) => th.dataset.col));
  assert.equal(rows, m.initiators.length);
  assert.deepEqual(cols, m.targets.map(String));
  return got;
}

test("view bench.json: both heatmaps, reasons, spread, rated, distances, tiers, conditions, loaded curves", async (t) => {
  // Relative to the repository, as the page's title shows it (and docs/img/bench.png).
  const rel = "testdata/bench/view/2x3-loaded.json";
  const { url } = await serve(t, ["view", rel, "--listen", "127.0.0.1:0"], repo);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#bench table.bmatrix");
  assert.equal(await page.textContent("#mode"), `bench ${rel}`);
  assert.equal(await page.isVisible("#plots"), false, "the time-series view is shown over the bench page");

  for (const [kind, key] of Object.entries(KINDS)) {
    const m = doc[key];
    const got = await checkShape(page, kind, m);
    m.initiators.forEach((i, r) =>
      m.targets.forEach((tg, c) => {
        const cell = got[r * m.targets.length + c];
        const what = `${kind} ${i} -> ${tg}`;
        if (m.matrix[r][c] === null) {
          // Not measured: said so, with the reason from skipped on hover.
          const reason = doc.skipped.find((s) => s.kind === kind && s.initiator === i && s.target === tg).reason;
          assert.equal(cell.text, "not measured", what);
          assert.equal(cell.reason, reason, what);
          assert.ok(cell.title.includes(`why: ${reason}`), `${what}: title ${cell.title}`);
        } else {
          // The spread: min and max of the JSON, in the title too.
          assert.equal(cell.min, String(m.min[r][c]), what);
          assert.equal(cell.max, String(m.max[r][c]), what);
          assert.match(cell.title, /\nspread: .+ – /, what);
          assert.ok(cell.title.includes(`${m.samples[r][c].length} repeats: `), what);
          assert.match(cell.title, /placement: 99\.8% of|placement: 100\.0% of/, what);
        }
        // Rated beside measured (or why not on hover), the distance in the corner.
        const rated = doc.rated[RATED[kind]][r][c];
        assert.equal(cell.rated, rated === null ? undefined : String(rated), `${what}: rated`);
        if (rated === null) assert.ok(cell.title.includes(`rated (HMAT): none: ${doc.rated.missing[0].reason}`), `${what}: ${cell.title}`);
        assert.equal(cell.dist, `d ${doc.topology.nodes[i].distances[String(tg)]}`, `${what}: distance`);
      }),
    );
  }
  // Latency: lower is better, so the fastest cell is yellow (viridis' end) and the slowest purple.
  const bg = (kind, r, c) => page.$eval(`#bench table.bmatrix[data-kind=${kind}] td.cell[data-row="${r}"][data-col="${c}"]`, (td) => getComputedStyle(td).backgroundColor);
  assert.equal(await bg("latency", 1, 1), "rgb(253, 231, 37)");
  assert.equal(await bg("latency", 0, 2), "rgb(68, 1, 84)");
  assert.equal(await bg("bandwidth", 1, 1), "rgb(253, 231, 37)");
  assert.equal(await bg("bandwidth", 0, 2), "rgb(68, 1, 84)");
  assert.match(await page.textContent("#bench figure[data-kind=latency] .small"), /Lower latency is better/);
  assert.match(await page.textContent("#bench figure[data-kind=bandwidth] .small"), /Higher bandwidth is better/);

  // The CPU-less target is marked, every target has its tier.
  const heads = await page.$$eval("#bench table.bmatrix[data-kind=latency] thead th[data-col]", (ths) => ths.map((th) => ({ cpuless: th.classList.contains("cpuless"), tier: th.querySelector(".tier")?.textContent })));
  assert.deepEqual(heads, [
    { cpuless: false, tier: "tier 4" },
    { cpuless: false, tier: "tier 4" },
    { cpuless: true, tier: "tier 22" },
  ]);

  // Hovering a cell shows its details beside the heatmap.
  await page.hover('#bench table.bmatrix[data-kind=latency] td.cell[data-row="0"][data-col="1"]');
  assert.match(await page.textContent("#bench figure[data-kind=latency] .bdetail"), /node 0 → node 1: .*spread: .*rated \(HMAT\) read: 130 ns, write: 140 ns.*NUMA distance \(SLIT\): 21/);

  // Placement and conditions.
  const fact = (name) => page.textContent(`#bench dd[data-fact="${name}"]`);
  assert.match(await fact("placement"), /^99\.8% of the pages on their target at worst \(min fraction on target 0\.998\)/);
  assert.equal(await fact("CPU"), doc.conditions.cpu_model);
  assert.equal(await fact("THP"), "madvise");
  assert.equal(await fact("governor"), "performance");
  assert.equal(await fact("NUMA balancing"), "kernel.numa_balancing=1, turned off for the run");
  assert.equal(await fact("virtualisation"), "none seen (bare metal)");
  assert.equal(await fact("rated (HMAT)"), "read latency for 5 pairs, read bandwidth for 5; 1 pair without (hover a cell for why)");
  assert.equal(await fact("tier order"), "as measured: no contradiction");
  assert.equal(await fact("rated order"), "as measured: no contradiction");
  // No contradiction, so no cell is marked.
  assert.equal(await page.locator("#bench td.cell.contradicted, #bench td.cell .contra").count(), 0);
  assert.doesNotMatch(await page.textContent("#bench .bgrid"), /red frame/);
  assert.deepEqual(await page.locator("#bench ul.notes li").allTextContents(), doc.notes);
  assert.equal(await page.locator("#bench table.skipped tbody tr").count(), doc.skipped.length);

  // The loaded-latency curves: one uPlot series per pair with a curve, its points the JSON's, by
  // bandwidth; the pair without one (null, as bench writes it) listed with its reason.
  await checkLoaded(page, doc);
  assert.deepEqual(await page.locator("#bench .loaded-missing li").allTextContents(), [`node 1 → node 2: no curve: ${doc.loaded.pairs[5].reason}`]);

  await page.screenshot({ path: join(artifacts, "bench.png"), fullPage: true });
  if (process.env.NUMASCOPE_DOCS_IMG) await page.screenshot({ path: join(repo, "docs/img/bench.png"), fullPage: true });
});

test("a bench document from disk without topology, rated values or loaded: what is missing is said", async (t) => {
  const dir = tempDir(t);
  const bare = structuredClone(doc);
  delete bare.topology;
  delete bare.loaded;
  // No HMAT here; the tiers come from rated alone.
  bare.rated = { initiators: [0, 1], targets: [0, 1, 2], not_reported: "this machine's firmware has no HMAT", read_latency_ns: [[null, null, null], [null, null, null]], missing: [], memory_tiers: { 0: 4, 1: 4, 2: 22 }, tier_order: { checked: true, contradictions: [] } };
  delete bare.bandwidth_mbs;
  const file = join(dir, "bench.json");
  writeFileSync(file, JSON.stringify(bare, null, 2));
  const page = await browser(t);
  await page.goto(dist);
  await page.setInputFiles("#file", file);
  await page.waitForSelector("#bench table.bmatrix");
  assert.equal(await page.textContent("#mode"), "bench bench.json");
  await checkShape(page, "latency", bare.latency_ns);
  assert.equal(await page.locator("#bench table.bmatrix[data-kind=bandwidth]").count(), 0);
  assert.match(await page.textContent("#bench figure[data-kind=bandwidth]"), /measured without bandwidth \(numascope bench --kind bandwidth, or all, measures it\)/);
  assert.equal(await page.locator("#bench td.cell .rated, #bench td.cell .dist").count(), 0);
  assert.equal(await page.textContent('#bench dd[data-fact="rated (HMAT)"]'), "none: this machine's firmware has no HMAT");
  // Without a topology, node 2 (no row) is a target only, in rated's tier.
  assert.deepEqual(await page.locator('#bench table.bmatrix thead th[data-col="2"] small').allTextContents(), ["tier 22", "target only"]);
  assert.match(await page.textContent("#bench .bloaded"), /Not in this document: it was measured without loaded latency \(numascope bench --kind loaded, or all, measures it\)/);
  assert.equal(await page.locator("#bench .loaded-plot").count(), 0);
});

test("view on what numascope bench --kind loaded writes here: the curves, and both heatmaps said left out", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "loaded.json");
  execFileSync(binary, ["bench", "--kind", "loaded", "--mix", "3:1", "--size", "8M", "--repeat", "1", "--format", "json", "-o", file], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  const real = JSON.parse(readFileSync(file, "utf8"));
  assert.equal(real.latency_ns, undefined);
  assert.equal(real.loaded.mix, "3:1");
  const { url } = await serve(t, ["view", file, "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#bench .bloaded");
  for (const kind of Object.keys(KINDS)) {
    assert.equal(await page.locator(`#bench table.bmatrix[data-kind=${kind}]`).count(), 0);
    assert.match(await page.textContent(`#bench figure[data-kind=${kind}]`), new RegExp(`measured without ${kind} \\(numascope bench --kind ${kind}, or all, measures it\\)`));
  }
  await checkLoaded(page, real);
  if (real.loaded.pairs.some((p) => p.latency_ns !== null)) assert.match(await page.textContent("#bench .bloaded"), /\(mix 3:1 kernel\)/);
});

test("contradictions of the tier order and of the rated order mark their cells, with their sentences as text", async (t) => {
  // 2x3-contradicted.json: from node 0, the CPU-less node 2 (tier 22, rated 240 ns) measured
  // faster than node 1 (tier 4, rated 130 ns) beyond the spread: one contradiction of each
  // order, as bench computes them (TestViewFixturesTierOrder). A copy with markup in both
  // sentences, opened from disk.
  const src = JSON.parse(readFileSync(join(repo, "testdata/bench/view/2x3-contradicted.json"), "utf8"));
  const tc = src.rated.tier_order.contradictions;
  const rc = src.rated.rated_order.contradictions;
  assert.equal(tc.length, 1);
  assert.equal(rc.length, 1);
  const markup = ` <img src=x onerror="window.__pwned=1"><b>bold</b>`;
  const tierText = tc[0].text + markup,
    ratedText = rc[0].text + markup;
  const copy = structuredClone(src);
  copy.rated.tier_order.contradictions[0].text = tierText;
  copy.rated.rated_order.contradictions[0].text = ratedText;
  const dir = tempDir(t);
  const file = join(dir, "bench.json");
  writeFileSync(file, JSON.stringify(copy));
  const page = await browser(t);
  await page.goto(dist);
  await page.setInputFiles("#file", file);
  await page.waitForSelector("#bench table.bmatrix");

  const marked = (kind) =>
    page.$$eval(`#bench table.bmatrix[data-kind=${kind}] td.cell.contradicted`, (tds) =>
      tds.map((td) => ({ row: td.dataset.row, col: td.dataset.col, role: td.dataset.contradiction, labels: [...td.querySelectorAll(".contra")].map((x) => x.textContent), title: td.title })),
    );
  const c = tc[0];
  assert.equal(rc[0].rated_better_node, c.faster_tier_node);
  assert.equal(rc[0].rated_worse_node, c.slower_tier_node);
  const lat = await marked("latency");
  assert.deepEqual(
    lat.map(({ row, col, role, labels }) => ({ row, col, role, labels })),
    [
      { row: String(c.initiator), col: String(c.faster_tier_node), role: "faster overrated", labels: ["⚠ fast tier lost", "⚠ overrated"] },
      { row: String(c.initiator), col: String(c.slower_tier_node), role: "slower underrated", labels: ["⚠ slow tier won", "⚠ underrated"] },
    ],
  );
  for (const m of lat) assert.ok(m.title.includes(`tier order contradicted (`) && m.title.includes(`: ${tierText}\n`) && m.title.endsWith(`: ${ratedText}`), m.title);
  // Only those two: the other cells, and the bandwidth matrix (no contradiction there), are unmarked.
  assert.equal(await page.locator("#bench td.cell.contradicted").count(), 2);
  assert.equal(await page.locator("#bench td.cell .contra").count(), 4);
  assert.deepEqual(await marked("bandwidth"), []);
  const frame = await page.$eval(`#bench table.bmatrix[data-kind=latency] td.cell.contradicted`, (td) => getComputedStyle(td).boxShadow);
  assert.match(frame, /rgb\(220, 38, 38\).*inset|inset.*rgb\(220, 38, 38\)/, "a red frame");
  assert.match(await page.textContent("#bench figure[data-kind=latency] .small"), /red frame: the pair contradicts the kernel's memory-tier order .* or the order of the HMAT ratings/);
  assert.doesNotMatch(await page.textContent("#bench figure[data-kind=bandwidth] .small"), /red frame/);
  // docs/bench.md shows the marked heatmap (before the hover puts the sentences under it).
  if (process.env.NUMASCOPE_DOCS_IMG) await page.locator("#bench figure[data-kind=latency]").screenshot({ path: join(repo, "docs/img/bench-contradiction.png") });
  // Hovering says it in words under the heatmap; the run panel lists them; all as text.
  await page.hover(`#bench table.bmatrix[data-kind=latency] td.cell[data-row="${c.initiator}"][data-col="${c.slower_tier_node}"]`);
  const detail = await page.textContent("#bench figure[data-kind=latency] .bdetail");
  assert.ok(detail.includes(`(this node, in a slower tier, measured better than node ${c.faster_tier_node}): ${tierText}`), detail);
  assert.ok(detail.includes(`(this node, rated worse, measured better than node ${c.faster_tier_node}): ${ratedText}`), detail);
  assert.equal(await page.textContent('#bench dd[data-fact="tier order"]'), "contradicted by 1 measurement (below)");
  assert.equal(await page.textContent('#bench dd[data-fact="rated order"]'), "contradicted by 1 measurement (below)");
  assert.deepEqual(await page.locator("#bench ul.contradictions li").allTextContents(), [tierText]);
  assert.deepEqual(await page.locator("#bench ul.rated-contradictions li").allTextContents(), [ratedText]);
  assert.equal(await page.locator("#bench img, #bench b").count(), 0, "the sentences' markup became elements");
  assert.equal(await page.evaluate(() => window.__pwned), undefined);

  // The rated order alone (tiers agreeing): the same two cells, marked for it only.
  const ratedOnly = structuredClone(src);
  ratedOnly.rated.tier_order.contradictions = [];
  const file2 = join(dir, "rated-only.json");
  writeFileSync(file2, JSON.stringify(ratedOnly));
  await page.setInputFiles("#file", file2);
  await page.waitForFunction(() => document.querySelector("#mode")?.textContent === "bench rated-only.json");
  assert.deepEqual(
    (await marked("latency")).map(({ col, role, labels }) => ({ col, role, labels })),
    [
      { col: String(c.faster_tier_node), role: "overrated", labels: ["⚠ overrated"] },
      { col: String(c.slower_tier_node), role: "underrated", labels: ["⚠ underrated"] },
    ],
  );
  assert.equal(await page.textContent('#bench dd[data-fact="tier order"]'), "as measured: no contradiction");

  // conditions.host_load, an object: listed in the words of bench's text output, as text; a
  // field that is not a number (here markup) is "–", never parsed.
  const loaded = structuredClone(src);
  loaded.conditions.host_load = { other_runnable_mean: 2.46, other_runnable_max: 5, samples: 9, online_cpus: 16, loadavg_1m: `<img src=x onerror="window.__pwned=1">`, steal_percent: 3.25, busy: true };
  const file3 = join(dir, "host-load.json");
  writeFileSync(file3, JSON.stringify(loaded));
  await page.setInputFiles("#file", file3);
  await page.waitForFunction(() => document.querySelector("#mode")?.textContent === "bench host-load.json");
  const load = page.locator('#bench dd[data-fact="host load"]');
  assert.equal(await load.textContent(), "busy: 2.5 other tasks runnable on average (at most 5, 16 CPUs online), steal time 3.3% of the CPUs' time");
  assert.equal(await load.getAttribute("class"), "warn");
  loaded.conditions.host_load = { other_runnable_mean: 0, other_runnable_max: 0, samples: 3, online_cpus: 2, loadavg_1m: null, steal_percent: null, busy: false };
  const file4 = join(dir, "host-quiet.json");
  writeFileSync(file4, JSON.stringify(loaded));
  await page.setInputFiles("#file", file4);
  await page.waitForFunction(() => document.querySelector("#mode")?.textContent === "bench host-quiet.json");
  assert.equal(await load.textContent(), "0.0 other tasks runnable on average (at most 0, 2 CPUs online), steal time not counted by this kernel");
  assert.equal(await page.locator("#bench img").count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);

  // The tiers from numascope's topology.memory_tiers ("id"), or from an older file's top-level
  // list ("tier"), where the nodes have no memory_tier.
  const tiers = async (doc, name) => {
    writeFileSync(join(dir, name), JSON.stringify(doc));
    await page.setInputFiles("#file", join(dir, name));
    await page.waitForFunction((n) => document.querySelector("#mode")?.textContent === `bench ${n}`, name);
    return page.$$eval("#bench table.bmatrix[data-kind=latency] thead th[data-col]", (ths) => ths.map((th) => th.querySelector(".tier")?.textContent));
  };
  const untiered = structuredClone(src);
  for (const n of untiered.topology.nodes) delete n.memory_tier;
  const listed = structuredClone(untiered);
  listed.topology.memory_tiers = [{ id: 4, nodes: [0, 1] }, { id: 22, nodes: [2] }];
  assert.deepEqual(await tiers(listed, "tiers-topology.json"), ["tier 4", "tier 4", "tier 22"]);
  const legacy = structuredClone(untiered);
  legacy.memory_tiers = [{ tier: 5, nodes: [0, 1] }, { tier: 21, nodes: [2] }];
  assert.deepEqual(await tiers(legacy, "tiers-legacy.json"), ["tier 5", "tier 5", "tier 21"]);
});

test("view on what numascope bench writes here: the heatmaps have its shape and values", async (t) => {
  const dir = tempDir(t);
  const file = join(dir, "bench.json");
  execFileSync(binary, ["bench", "--size", "8M", "--repeat", "1", "--format", "json", "-o", file], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  const real = JSON.parse(readFileSync(file, "utf8"));
  const { url } = await serve(t, ["view", file, "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#bench table.bmatrix");
  for (const [kind, key] of Object.entries(KINDS)) {
    const m = real[key];
    const got = await checkShape(page, kind, m);
    // bench writes the topology: every cell has its SLIT distance, as sysfs gives it.
    m.initiators.forEach((i, r) =>
      m.targets.forEach((tg, c) => {
        const d = real.topology.nodes.find((n) => n.id === i).distances[String(tg)];
        assert.equal(got[r * m.targets.length + c].dist, `d ${d}`, `${kind} ${i} -> ${tg}`);
      }),
    );
  }
  const ids = real.topology.nodes.map((n) => n.id);
  assert.deepEqual(real.topology.distances, real.topology.nodes.map((a) => ids.map((b) => a.distances[String(b)] ?? null)));
  assert.equal(await page.textContent('#bench dd[data-fact="THP"]'), real.conditions.thp || "–");
  // What else ran: bench measures it on every run, and the page says it.
  assert.ok(real.conditions.host_load, "bench wrote no conditions.host_load");
  assert.match(await page.textContent('#bench dd[data-fact="host load"]'), /^(busy: )?\d+\.\d other tasks runnable on average \(at most \d+, \d+ CPUs online(; load average \d+\.\d\d at the start)?\), steal time /);
  // --kind all measures loaded latency: a curve per pair whose node has a CPU to inject beside the
  // chaser's, the others listed with their reason.
  assert.ok(real.loaded && real.peak_injection_mbs, "bench (--kind all) wrote no loaded section or peak injection");
  await checkLoaded(page, real);
});
