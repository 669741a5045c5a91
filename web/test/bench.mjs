// Browser benchmark (scripts/web-bench): open a big recording with
// `numascope view` in headless Chromium and measure how long it takes to
// open and how long frames take while panning. Prints JSON figures.
//
//   node test/bench.mjs FILE
import { test } from "node:test";
import { serve, browser, tempDir, artifacts } from "./util.mjs";
import { join } from "node:path";

const file = process.env.NUMASCOPE_BENCH_FILE;

function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  return { n: s.length, median: +q(0.5).toFixed(2), p95: +q(0.95).toFixed(2), max: +s[s.length - 1].toFixed(2) };
}

test("benchmark: open and pan a big recording", { skip: !file && "set NUMASCOPE_BENCH_FILE" }, async (t) => {
  const dir = tempDir(t);
  const t0 = performance.now();
  const { url } = await serve(t, ["view", file, "--listen", "127.0.0.1:0"], dir);
  const serverLoad = performance.now() - t0;
  const page = await browser(t, { width: 1600, height: 900 });
  const t1 = performance.now();
  await page.goto(url);
  await page.waitForFunction(() => {
    const ns = window.__numascope;
    const r = ns.range();
    return ns.samples.store.n > 0 && r.fetched && !r.pending;
  });
  const open = performance.now() - t1;
  const info = await page.evaluate(() => ({ samples: window.__numascope.samples.hello.samples, columns: window.__numascope.samples.hello.columns.length }));

  async function pan(min, max, step, frames) {
    await page.evaluate(([a, b]) => window.__numascope.setWindow(a, b), [min, max]);
    await page.waitForFunction(() => !window.__numascope.range().pending);
    const r0 = await page.evaluate(() => window.__numascope.requests());
    const res = await page.evaluate(
      ([step, frames]) =>
        new Promise((resolve) => {
          const ns = window.__numascope;
          const work = [],
            gaps = [];
          let last = null,
            i = 0;
          function frame(ts) {
            if (last !== null) gaps.push(ts - last);
            last = ts;
            const a = ns.samples.xr,
              span = a.max - a.min;
            const w0 = performance.now();
            ns.setWindow(a.min + span * step, a.max + span * step);
            work.push(performance.now() - w0);
            if (++i < frames) requestAnimationFrame(frame);
            else resolve({ work, gaps });
          }
          requestAnimationFrame(frame);
        }),
      [step, frames],
    );
    const s0 = performance.now();
    await page.waitForFunction(() => !window.__numascope.range().pending);
    const settle = performance.now() - s0;
    const requests = (await page.evaluate(() => window.__numascope.requests())) - r0;
    return { renderMs: stats(res.work), frameIntervalMs: stats(res.gaps), rangeRequests: requests, settleAfterPanMs: +settle.toFixed(1) };
  }
  const whole = await pan(0, 600, -0.004, 240); // the whole 10 minutes, panning
  const minute = await pan(300, 360, 0.01, 240); // a 60 s window
  const second = await pan(100, 101, 0.02, 240); // 1 s: full resolution
  await page.screenshot({ path: join(artifacts, "bench.png") });
  const out = { file, ...info, serverLoadMs: +serverLoad.toFixed(0), openInBrowserMs: +open.toFixed(0), panWhole: whole, pan60s: minute, pan1s: second };
  console.log("BENCH " + JSON.stringify(out));
});
