// Browser tests of the live event picker and of what a client that connects
// later gets: real headless Chromium against a real `numascope live` on
// this machine (run scripts/web-test).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { artifacts, binary, repo, tempDir, serve, browser } from "./util.mjs";

const sampleCount = (page) => page.evaluate(() => window.__numascope.samples.received);

/** catalog is what `numascope events --format json` says about this machine. */
function catalog() {
  return JSON.parse(execFileSync(binary, ["events", "--format", "json"], { encoding: "utf8", maxBuffer: 1 << 26 }));
}

test("live: events that cannot be counted here are greyed out with the reason and fix", async (t) => {
  const perf = catalog().find((s) => s.name === "perf");
  const cycles = perf?.present && perf.events.find((e) => e.name === "cycles");
  if (!cycles?.unavailable) {
    t.skip("perf.cycles is available on this machine (it has a PMU): nothing to grey out");
    return;
  }
  const dir = tempDir(t);
  const { url } = await serve(
    t,
    ["live", "--listen", "127.0.0.1:0", "-i", "50ms", "--batch", "100ms", "--sampler-node", "none", "--ctl", join(dir, "ctl"), "-e", "cpu.user"],
    dir,
  );
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('live')");
  const box = page.locator('input[data-event="perf.cycles"]');
  await box.waitFor({ state: "attached" });
  assert.equal(await box.isDisabled(), true, "perf.cycles can be ticked");
  const label = page.locator("label.ev", { has: box });
  assert.match(await label.getAttribute("class"), /\bunavailable\b/);
  const title = await label.getAttribute("title");
  assert.ok(title.includes(cycles.reason), `tooltip ${title} lacks the reason ${cycles.reason}`);
  if (cycles.fix) assert.ok(title.includes(`fix: ${cycles.fix}`), `tooltip ${title} lacks the fix`);
  assert.equal(await label.locator(".why").textContent(), `unavailable: ${cycles.reason}`);
  // An available event of the same sensor stays selectable.
  const sw = perf.events.find((e) => !e.unavailable);
  if (sw) assert.equal(await page.locator(`input[data-event="perf.${sw.name}"]`).isDisabled(), false, `perf.${sw.name} is disabled`);
  // Clicking the greyed-out entry changes nothing: no request, no error.
  await label.click({ force: true });
  await page.waitForTimeout(300);
  assert.equal(await box.isChecked(), false);
  assert.equal(await page.isVisible("#error"), false, await page.textContent("#error"));
  const cols = await page.evaluate(() => window.__numascope.samples.store.cur.map((i) => window.__numascope.samples.store.cols[i].name));
  assert.deepEqual(cols, ["cpu.user"]);
  await label.scrollIntoViewIfNeeded();
  await page.screenshot({ path: join(artifacts, "live-unavailable.png") });
});

/** columnRange is the first and last time column name has a value in a page's store, and how many. */
const columnRange = (page, name) =>
  page.evaluate((name) => {
    const s = window.__numascope.samples.store;
    const i = s.index.get(name);
    if (i === undefined) return null;
    let first = null,
      last = null,
      n = 0;
    for (let k = 0; k < s.n; k++) {
      if (Number.isNaN(s.v[i][k])) continue;
      if (first === null) first = s.t[k];
      last = s.t[k];
      n++;
    }
    return { first, last, n };
  }, name);

test("live: a browser opened after the events changed gets every current column's whole history", async (t) => {
  const dir = tempDir(t);
  const twonode = join(repo, "internal/sensor/testdata/twonode");
  const { url } = await serve(
    t,
    ["live", "--root", twonode, "--listen", "127.0.0.1:0", "-i", "50ms", "--batch", "100ms", "--ctl", join(dir, "ctl"), "-e", "node.numa_hit,node.numa_miss"],
    dir,
  );
  const page = await browser(t);
  await page.goto(url);
  await page.waitForFunction(() => window.__numascope.samples.received >= 10);
  // Add an event, then remove one, from the page.
  await page.check('input[data-event="vmstat.pgfault"]');
  await page.waitForFunction(() => window.__numascope.samples.store.cur.length === 3);
  const added = await page.evaluate(() => window.__numascope.samples.store.tMax);
  await page.uncheck('input[data-event="node.numa_miss"]');
  await page.waitForFunction(() => window.__numascope.samples.store.cur.length === 2);
  await page.waitForFunction((n) => window.__numascope.samples.received > n + 10, await sampleCount(page));
  const hit1 = await columnRange(page, "node.numa_hit");

  // A second browser tab, opened now.
  const late = await page.context().newPage();
  await late.goto(url);
  await late.waitForFunction(() => window.__numascope.samples.received > 0);
  const hit2 = await columnRange(late, "node.numa_hit");
  assert.equal(hit2.first, hit1.first, `node.numa_hit starts at ${hit2.first} in the late tab, ${hit1.first} in the first`);
  assert.ok(hit2.n >= hit1.n, `the late tab has ${hit2.n} samples of node.numa_hit, the first had ${hit1.n}`);
  const pf = await columnRange(late, "vmstat.pgfault");
  assert.ok(pf.first > hit2.first && pf.first >= added - 0.5, `vmstat.pgfault starts at ${pf.first}; it was added at about ${added}`);
  assert.equal(await columnRange(late, "node.numa_miss"), null, "the removed column reached the late tab");
  const cols = await late.evaluate(() => window.__numascope.samples.store.cur.map((i) => window.__numascope.samples.store.cols[i].name));
  assert.deepEqual(cols, ["node.numa_hit", "vmstat.pgfault"]);
  const marks = await late.evaluate(() => window.__numascope.samples.store.marks.filter((m) => m.mark === "columns").length);
  assert.equal(marks, 2, "the late tab does not show where the columns changed");
  await late.screenshot({ path: join(artifacts, "live-late-client.png") });
});
