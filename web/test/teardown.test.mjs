// The browser tests' teardown (util.mjs): a page still polling its server when a test ends must
// not fail the test, and the page closes before the server stops.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { browser, serve, tempDir, cleanup } from "./util.mjs";

test("a page still polling its server when the test ends is closed before the server stops", async (t) => {
  // Registered first, so it runs last: by then the page is closed and the server stopped.
  const order = [];
  cleanup(t, () => assert.deepEqual(order, ["page closed", "server stopped"], "teardown order"));
  const dir = tempDir(t);
  const { url, proc } = await serve(t, ["live", "--listen", "127.0.0.1:0", "-i", "200ms", "--ctl", join(dir, "ctl"), "-e", "node.numa_hit"], dir);
  const page = await browser(t);
  await page.goto(url);
  // Poll as fast as the page can, and never stop: a server that stopped under it would give
  // net::ERR_CONNECTION_REFUSED, an error in the page, in the after hook (issue 29).
  await page.evaluate(() => setInterval(() => fetch(location.href, { cache: "no-store" }).catch(() => {}), 5));
  await page.waitForTimeout(100);
  page.on("close", () => order.push("page closed"));
  proc.on("exit", () => order.push("server stopped"));
});
