// Helpers for the browser tests: start numascope, launch Debian's chromium
// through playwright-core.
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const webDir = join(dirname(fileURLToPath(import.meta.url)), "..");
export const repo = join(webDir, "..");
export const artifacts = join(webDir, "test-artifacts");
mkdirSync(artifacts, { recursive: true });

/** binary is the numascope to test: $NUMASCOPE or bin/numascope. */
export const binary = process.env.NUMASCOPE || join(repo, "bin", "numascope");

const teardowns = new WeakMap();

/**
 * cleanup runs fn when test t ends, in the reverse order of registration (as Go's t.Cleanup): what a
 * test started last stops first, so a page closes before the server it polls stops. node's t.after
 * runs hooks in registration order, which stopped the server under a page still polling it, and the
 * page's ERR_CONNECTION_REFUSED then failed the test (issue 29). Every fn runs even if one throws; the
 * first error is thrown after them.
 */
export function cleanup(t, fn) {
  let td = teardowns.get(t);
  if (!td) {
    td = { ending: false, fns: [] };
    teardowns.set(t, td);
    t.after(async () => {
      td.ending = true;
      let first;
      while (td.fns.length) {
        try {
          await td.fns.pop()();
        } catch (e) {
          first ??= e;
        }
      }
      if (first) throw first;
    });
  }
  td.fns.push(fn);
}

/** ending reports whether test t's teardown has begun: what a page logs from then on is not its error. */
function ending(t) {
  return teardowns.get(t)?.ending ?? false;
}

export function tempDir(t) {
  const d = mkdtempSync(join(tmpdir(), "numascope-web-"));
  cleanup(t, () => rmSync(d, { recursive: true, force: true }));
  return d;
}

/**
 * fakelive is the live server with a fake process feed (internal/live/fakelive),
 * which scripts/web-test builds next to bin/numascope.
 */
export const fakelive = process.env.NUMASCOPE_FAKELIVE || join(repo, "bin", "fakelive");

/** serve runs numascope (or another server printing the same line: bin) with args and resolves with the URL it prints. */
export function serve(t, args, cwd, bin = binary) {
  return new Promise((resolve, reject) => {
    const p = spawn(bin, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let out = "",
      err = "";
    const timer = setTimeout(() => reject(new Error(`numascope ${args.join(" ")} printed no URL; stderr: ${err}`)), 15000);
    p.stdout.on("data", (b) => {
      out += b;
      const m = /open (http:\/\/\S+) in a browser/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ url: m[1], proc: p, stderr: () => err });
      }
    });
    p.stderr.on("data", (b) => (err += b));
    p.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${bin} ${args.join(" ")} exited with ${code}: ${err}`));
    });
    cleanup(
      t,
      () =>
        new Promise((res) => {
          if (p.exitCode !== null) return res();
          p.on("exit", res);
          p.kill("SIGTERM");
        }),
    );
  });
}

/** browser launches headless chromium with a fresh profile and returns a page. */
export async function browser(t, viewport = { width: 1400, height: 900 }) {
  const profile = mkdtempSync(join(tmpdir(), "numascope-chromium-"));
  const ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  cleanup(t, async () => {
    await ctx.close();
    rmSync(profile, { recursive: true, force: true });
  });
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  // The page's errors while the test runs; once its teardown has begun (servers stopping), what the
  // page logs is the teardown's doing, not the page's error.
  const errors = [];
  page.on("pageerror", (e) => ending(t) || errors.push(String(e)));
  page.on("console", (m) => ending(t) || (m.type() === "error" && errors.push(m.text())));
  // Registered last, so it runs first: before the page closes and the servers stop.
  cleanup(t, () => {
    if (errors.length) throw new Error(`errors in the page: ${errors.join("; ")}`);
  });
  return page;
}
