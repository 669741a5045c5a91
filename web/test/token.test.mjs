// The token on every bind: the printed URL carries it, the page keeps it in a cookie so that
// reloading the bare address works, and nothing connects without it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { repo, binary, tempDir, serve, browser } from "./util.mjs";

const twonode = join(repo, "internal/sensor/testdata/twonode");

test("the printed URL carries a token; the cookie lets the bare address reload; no token, no data", async (t) => {
  const dir = tempDir(t);
  const rec = join(dir, "r.jsonl");
  execFileSync(binary, ["record", "--root", twonode, "-o", rec, "-n", "5", "-i", "10ms", "--ctl", join(dir, "ctl")], { stdio: "pipe" });
  const { url } = await serve(t, ["view", rec, "--listen", "127.0.0.1:0"], dir);
  const u = new URL(url);
  assert.match(u.searchParams.get("token") ?? "", /^[0-9a-f]{32}$/, `URL ${url} has no generated token`);
  const bare = `${u.origin}/`;
  // Without the token the websocket is refused.
  const ws = await fetch(`${u.origin}/ws`);
  assert.equal(ws.status, 401);
  assert.match(await ws.text(), /token/);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('recording')");
  await page.waitForFunction(() => window.__numascope.app.store.n > 0);
  const cookies = await page.context().cookies(bare);
  const ck = cookies.find((c) => c.name === `numascope-token-${u.port}`);
  assert.ok(ck && ck.httpOnly && ck.sameSite === "Strict", `cookies ${JSON.stringify(cookies)}`);
  // Reloading the address without ?token= works through the cookie.
  await page.goto(bare);
  await page.waitForSelector("#mode:has-text('recording')");
  await page.waitForFunction(() => window.__numascope.app.store.n > 0);
});
