// End-to-end test of the hosts page: `numascope view a.jsonl.zst b.jsonl.zst` on two recordings made
// by `numascope record` on this machine, one after the other, then given two hosts' names (one of
// them HTML that would run script) and compressed by `numascope convert`. The page must draw one
// small multiple per host, labelled with the host name as text, on one shared time axis on which
// the later recording's first point lies exactly its start-time difference to the right.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { artifacts, binary, repo, tempDir, serve, browser } from "./util.mjs";

const HOSTS = ["alpha-node07", `<img src=x onerror="window.__pwned=1">beta`];

/** seconds is an RFC 3339 time with up to nanoseconds as seconds since the epoch, without losing the nanoseconds to Date's milliseconds. */
function seconds(rfc) {
  const m = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?Z$/.exec(rfc);
  assert.ok(m, `not an RFC 3339 UTC time: ${rfc}`);
  return Date.parse(m[1] + "Z") / 1000 + Number(m[2] ?? 0);
}

/** record makes a real recording, renames its host and compresses it; it returns the file and its header and first sample. */
function record(dir, name, host) {
  const plain = join(dir, `${name}.jsonl`);
  execFileSync(binary, ["record", "-o", plain, "-n", "6", "-i", "100ms", "-e", "vmstat.pgfault,node.MemFree", "--ctl", join(dir, `${name}.ctl`)], { stdio: "ignore" });
  const lines = readFileSync(plain, "utf8").split("\n");
  const header = JSON.parse(lines[0]);
  header.host = host;
  lines[0] = JSON.stringify(header);
  writeFileSync(plain, lines.join("\n"));
  const zst = join(dir, `${name}.jsonl.zst`);
  execFileSync(binary, ["convert", plain, "-o", zst], { stdio: "ignore" });
  const first = JSON.parse(lines.find((l) => l.startsWith("[")));
  return { file: zst, header, first, samples: lines.filter((l) => l.startsWith("[")).length };
}

test("view A B: one small multiple per host, labelled as text, aligned by wall-clock start", async (t) => {
  const dir = tempDir(t);
  const a = record(dir, "a", HOSTS[0]);
  await new Promise((r) => setTimeout(r, 1500)); // b starts well after a
  const b = record(dir, "b", HOSTS[1]);
  const offset = seconds(b.header.start) - seconds(a.header.start);
  assert.ok(offset > 1.5, `b starts ${offset} s after a`);

  const { url } = await serve(t, ["view", a.file, b.file, "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForFunction(() => window.__numascope?.hosts().length === 2);
  assert.equal(await page.isVisible("#plots"), false, "the time-series view is shown over the hosts page");
  assert.equal(await page.textContent("#mode"), "2 hosts");

  // Labels: the host names, as text; nothing of the hostile one became an element or ran.
  const labels = await page.$$eval("#hosts figure.host-multiple h3.host-name", (hs) => hs.map((h) => h.textContent));
  assert.deepEqual(labels, HOSTS);
  assert.equal(await page.$$eval("#hosts img", (x) => x.length), 0, "a host name became an element");
  assert.equal(await page.evaluate(() => window.__pwned), undefined, "a host name ran script");
  const metas = await page.$$eval("#hosts .host-meta", (m) => m.map((x) => x.textContent));
  assert.ok(metas[0].includes(a.file) && metas[1].includes(b.file), `the cards name their files: ${metas}`);

  // Alignment: one shared x scale, each recording at its start's offset from the earliest.
  const plots = await page.evaluate(() => window.__numascope.hosts());
  const [pa, pb] = plots;
  assert.deepEqual([pa.host, pb.host], HOSTS);
  assert.equal(pa.xmin, pb.xmin, "the plots share one x scale");
  assert.equal(pa.xmax, pb.xmax, "the plots share one x scale");
  assert.equal(pa.width, pb.width);
  assert.equal(pa.offset_s, 0, "the earlier recording starts the axis");
  assert.ok(Math.abs(pb.offset_s - offset) < 1e-6, `b's offset ${pb.offset_s} s, the headers' start times differ by ${offset} s`);
  assert.ok(pa.xmax >= pb.offset_s + b.first[0], "the axis reaches b's samples");
  assert.equal(pa.points, a.samples, "every sample of a is drawn (6 need no decimation)");
  assert.equal(pb.points, b.samples);
  assert.ok(Math.abs(pa.firstT - a.first[0]) < 1e-9, `a's first point at ${pa.firstT} s, its first sample at ${a.first[0]} s`);
  assert.ok(Math.abs(pb.firstT - (offset + b.first[0])) < 1e-6, `b's first point at ${pb.firstT} s, want ${offset + b.first[0]}`);
  const pxPerS = pa.width / (pa.xmax - pa.xmin);
  const want = (offset + b.first[0] - a.first[0]) * pxPerS;
  assert.ok(Math.abs(pb.firstX - pa.firstX - want) < 0.5, `b's first point is ${pb.firstX - pa.firstX} px right of a's, want ${want} (${offset} s at ${pxPerS} px/s)`);
  assert.ok(want > 100, `the offset shows (${want} px)`);

  // The event picker redraws every host's plot with the other event.
  const options = await page.$$eval("#hosts-event option", (o) => o.map((x) => x.value));
  assert.deepEqual(options, ["vmstat.pgfault", "node.MemFree"]);
  await page.selectOption("#hosts-event", "node.MemFree");
  await page.waitForFunction(() => document.querySelector("#hosts-event").value === "node.MemFree");
  const again = await page.evaluate(() => window.__numascope.hosts());
  assert.equal(again.length, 2);
  assert.ok(Math.abs(again[1].firstX - again[0].firstX - want) < 0.5, "still aligned after changing the event");
  await page.screenshot({ path: join(artifacts, "hosts.png"), fullPage: true });
  if (process.env.NUMASCOPE_DOCS_IMG) await page.screenshot({ path: join(repo, "docs/img/hosts.png"), fullPage: true });
});

test("view A B: a recording without a wall-clock start, or a profile among the files, is a one-line error", async (t) => {
  const dir = tempDir(t);
  const a = record(dir, "a", "one");
  const lines = readFileSync(join(dir, "a.jsonl"), "utf8").split("\n");
  const header = JSON.parse(lines[0]);
  delete header.start;
  lines[0] = JSON.stringify(header);
  const nostart = join(dir, "nostart.jsonl");
  writeFileSync(nostart, lines.join("\n"));
  const run = (...args) => {
    try {
      execFileSync(binary, args, { stdio: ["ignore", "ignore", "pipe"], timeout: 10000 });
      return "";
    } catch (e) {
      return String(e.stderr);
    }
  };
  let err = run("view", a.file, nostart, "--listen", "127.0.0.1:0");
  assert.match(err, /nostart\.jsonl: the recording has no wall-clock start time/);
  assert.equal(err.trim().split("\n").length, 1, err);
  const prof = join(dir, "p.json");
  writeFileSync(prof, JSON.stringify({ access_matrix: { thread_nodes: [], page_nodes: [0], counts: [] }, samples: 1 }));
  err = run("view", a.file, prof, "--listen", "127.0.0.1:0");
  assert.match(err, /p\.json is a profile document/);
});
