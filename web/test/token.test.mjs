// The token on every bind (issue 28, finding 1): the printed URL carries it, the page moves it
// into sessionStorage (per scheme, host and port, and per tab) and out of the address bar, and
// sends it in a header or websocket subprotocol, never in a cookie: cookies are per host, not per
// port, so a cookie went to every other server on 127.0.0.1, another local user's included.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { join } from "node:path";
import { existsSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { repo, binary, tempDir, serve, browser, cleanup } from "./util.mjs";

const twonode = join(repo, "internal/sensor/testdata/twonode");

/** tabErrors collects a tab's page errors; browser() does it for the first tab only. */
function tabErrors(t, page, allowed = /$^/) {
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && !allowed.test(m.text()) && errors.push(m.text()));
  t.after(() => {
    if (errors.length) throw new Error(`errors in the page: ${errors.join("; ")}`);
  });
}

test("the token goes to sessionStorage, not a cookie or the address bar; reload works; a fresh tab asks for it", async (t) => {
  const dir = tempDir(t);
  const rec = join(dir, "r.jsonl");
  execFileSync(binary, ["record", "--root", twonode, "-o", rec, "-n", "5", "-i", "10ms", "--ctl", join(dir, "ctl")], { stdio: "pipe" });
  const { url } = await serve(t, ["view", rec, "--listen", "127.0.0.1:0"], dir);
  const u = new URL(url);
  const tok = u.searchParams.get("token") ?? "";
  assert.match(tok, /^[0-9a-f]{32}$/, `URL ${url} has no generated token`);
  const bare = `${u.origin}/`;
  // Without the token the websocket is refused.
  const ws = await fetch(`${u.origin}/ws`);
  assert.equal(ws.status, 401);
  assert.match(await ws.text(), /token/);
  const page = await browser(t);
  // The cookie an older numascope set, still in an upgraded browser: the server expires it.
  await page.context().addCookies([{ name: `numascope-token-${u.port}`, value: tok, url: u.origin, httpOnly: true, sameSite: "Strict" }]);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('recording')");
  await page.waitForFunction(() => window.__numascope.samples.store.n > 0);
  assert.equal(page.url(), bare, "the token stays in the address bar");
  assert.deepEqual(await page.context().cookies(), [], "the browser holds a cookie");
  assert.equal(await page.evaluate(() => sessionStorage.getItem("numascope-token")), tok);
  // Reloading the bare address in the same tab works through sessionStorage.
  await page.reload();
  await page.waitForSelector("#mode:has-text('recording')");
  await page.waitForFunction(() => window.__numascope.samples.store.n > 0);

  // A fresh tab on the bare address has no token: it says so and asks for it, as text.
  const tab = await page.context().newPage();
  tabErrors(t, tab, /WebSocket connection to .* failed/);
  await tab.goto(bare);
  await tab.waitForSelector("#token-form");
  const ask = await tab.textContent("#token-form p");
  assert.match(ask, /needs its token/);
  assert.ok(ask.includes(u.host), `the prompt ${JSON.stringify(ask)} does not name the server`);
  assert.equal(await tab.evaluate(() => document.querySelector("#token-form p").children.length), 0, "the prompt is not plain text");
  assert.equal(await tab.evaluate(() => window.__numascope.samples.store.n), 0);
  // A malformed token is refused in the page; a wrong one by the server, which says so.
  await tab.fill("#token-input", "<b>x</b>");
  await tab.click("#token-form button");
  await tab.waitForSelector("#token-form .token-problem:has-text('letters, digits')");
  await tab.fill("#token-input", "0".repeat(32));
  await tab.click("#token-form button");
  await tab.waitForSelector("#token-form p:has-text('refused')");
  // The whole printed URL pasted works, and so does the page from then on.
  await tab.fill("#token-input", url);
  await tab.click("#token-form button");
  await tab.waitForSelector("#mode:has-text('recording')");
  await tab.waitForFunction(() => window.__numascope.samples.store.n > 0);
  assert.equal(await tab.isVisible("#token-form"), false);
  assert.deepEqual(await page.context().cookies(), [], "the browser holds a cookie");
});

test("a page on another port of 127.0.0.1 gets no numascope token (the cookie leak of issue 28)", async (t) => {
  // The attacker: another local user's HTTP server on 127.0.0.1, recording every request.
  const seen = [];
  const attacker = createServer((req, res) => {
    seen.push({ url: req.url, headers: req.headers });
    res.setHeader("Content-Type", "text/html");
    res.end(req.url === "/" ? '<!doctype html><title>elsewhere</title><img src="/pixel.png"><script>fetch("/beacon")</script>' : "");
  });
  await new Promise((res) => attacker.listen(0, "127.0.0.1", res));
  // Stopped last, once the browser has closed: while Chromium holds a socket to it (a keep-alive
  // or a speculative preconnect that never sent a request), server.close() waits for Node's 60 s
  // headers timeout, and this test took 66 s of a 20-minute CI run.
  cleanup(t, () => {
    const closed = new Promise((res) => attacker.close(res));
    attacker.closeAllConnections();
    return closed;
  });
  const evil = `http://127.0.0.1:${attacker.address().port}`;

  const dir = tempDir(t);
  const { url } = await serve(t, ["live", "--root", twonode, "--listen", "127.0.0.1:0", "-i", "50ms", "--batch", "100ms", "--ctl", join(dir, "ctl")], dir);
  const u = new URL(url);
  const tok = u.searchParams.get("token") ?? "";
  assert.match(tok, /^[0-9a-f]{32}$/);
  const page = await browser(t);
  // A cookie on numascope's origin, as a control: the browser does send the host's cookies to
  // the attacker's port, so a token kept in a cookie would reach it (numascope-token-PORT did).
  await page.context().addCookies([{ name: "control", value: "c", url: u.origin }]);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('live')");
  await page.waitForFunction(() => window.__numascope.samples.received > 0);
  // The processes page fetches with the token too.
  await page.click("#tab-processes");
  await page.waitForSelector("#processes");
  // Root then opens a page on the attacker's port, in a new tab and in the same one.
  const other = await page.context().newPage();
  await other.goto(`${evil}/`);
  await other.waitForLoadState("networkidle");
  await page.goto(`${evil}/?again`);
  await page.waitForLoadState("networkidle");
  assert.ok(seen.length >= 4, `the attacker saw ${seen.length} requests`);
  assert.ok(
    seen.some((r) => /(^|; )control=c/.test(r.headers.cookie ?? "")),
    `the control cookie did not reach the other port, so this test could not see a leak: ${JSON.stringify(seen)}`,
  );
  const all = JSON.stringify(seen);
  assert.ok(!all.includes(tok), `the attacker saw the token: ${all}`);
  assert.ok(!all.includes("numascope-token"), `the attacker saw a numascope cookie: ${all}`);
  // Nor can the attacker's origin read numascope's sessionStorage.
  assert.equal(await other.evaluate(() => sessionStorage.getItem("numascope-token")), null);
});

test("the Record button records although another user planted the predictable names (issue 28, finding 9)", async (t) => {
  const dir = tempDir(t);
  const recDir = join(dir, "rec");
  execFileSync("mkdir", ["-m", "1777", recDir]);
  // The names a time-only default would pick in the next minutes, planted ahead.
  const pad = (n) => String(n).padStart(2, "0");
  const start = Date.now();
  for (let s = -5; s <= 300; s++) {
    const d = new Date(start + s * 1000);
    const name = `numascope-${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}-${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}`;
    const utc = `numascope-${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}-${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}`;
    for (const n of new Set([name, utc])) writeFileSync(join(recDir, `${n}.jsonl.zst`), "");
  }
  const planted = new Set(readdirSync(recDir));
  const { url } = await serve(
    t,
    ["live", "--root", twonode, "--listen", "127.0.0.1:0", "-i", "50ms", "--batch", "100ms", "--record-dir", recDir, "--ctl", join(dir, "ctl")],
    dir,
  );
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('live')");
  await page.waitForFunction(() => window.__numascope.samples.received > 0);
  assert.equal(await page.inputValue("#record-path"), "");
  await page.click("#record");
  await page.waitForSelector("#record.on");
  assert.equal(await page.isVisible("#error"), false, `error: ${await page.textContent("#error")}`);
  const made = readdirSync(recDir).filter((n) => !planted.has(n));
  assert.equal(made.length, 1, `new files ${made}`);
  await page.click("#record");
  await page.waitForSelector("#record:not(.on)");
  const f = join(recDir, made[0]);
  assert.ok(existsSync(f) && statSync(f).size > 0, `${f} is empty`);
});

test("with --no-token the page connects without asking", async (t) => {
  const dir = tempDir(t);
  const rec = join(dir, "r.jsonl");
  execFileSync(binary, ["record", "--root", twonode, "-o", rec, "-n", "5", "-i", "10ms", "--ctl", join(dir, "ctl")], { stdio: "pipe" });
  const { url } = await serve(t, ["view", rec, "--listen", "127.0.0.1:0", "--no-token"], dir);
  assert.equal(new URL(url).search, "", `URL ${url}`);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('recording')");
  await page.waitForFunction(() => window.__numascope.samples.store.n > 0);
  assert.equal(await page.isVisible("#token-form"), false);
});
