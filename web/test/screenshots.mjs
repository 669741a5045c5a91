// Regenerates the web client's screenshots in docs/img from the real pages, in headless
// Chromium against bin/numascope (scripts/web-screenshots runs it): live on this machine
// while a workload allocates and frees memory, view of a --discrete recording of the same
// workload (with labels sent through the control FIFO), live's processes page on this
// machine while a python3 touches 300 MiB in a loop (in the table's first row, its
// drill-down open), and an experiment's report (the tiny experiment of
// experiment.test.mjs on the captured two-node machine). Not a test: the file name does
// not end in .test.mjs.
import { spawn, execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { repo, binary, tempDir, serve, browser } from "./util.mjs";

const img = process.env.NUMASCOPE_IMG_DIR || join(repo, "docs/img");
const twonode = join(repo, "internal/sensor/testdata/twonode");

// What serve, tempDir and browser expect of node:test's t: cleanups, run at the end.
const cleanups = [];
const t = { after: (f) => cleanups.push(f) };

// A workload: a python3 that allocates, touches and frees 200 MiB every second.
const churn = `import time
for i in range(SECONDS):
    b = bytearray(200 << 20)
    for k in range(0, len(b), 4096): b[k] = 1
    time.sleep(0.5)
    del b
    time.sleep(0.5)
`;
function workload(dir, seconds) {
  const f = join(dir, "churn.py");
  writeFileSync(f, churn.replace("SECONDS", String(seconds)));
  return f;
}

async function live() {
  const dir = tempDir(t);
  const w = spawn("python3", [workload(dir, 30)], { stdio: "ignore" });
  t.after(() => w.kill());
  const { url } = await serve(t, ["live", "--listen", "127.0.0.1:0", "-i", "250ms", "--ctl", join(dir, "ctl")], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForFunction(() => window.__numascope.samples.received >= 40, null, { timeout: 30000 });
  // A window the samples so far fill.
  await page.fill("#window", "10");
  await page.dispatchEvent("#window", "change");
  await page.waitForTimeout(500);
  await page.screenshot({ path: join(img, "live.png") });
}

async function view() {
  const dir = tempDir(t);
  const ctl = join(dir, "ctl");
  const py = workload(dir, 6);
  const script = `sleep 1; echo 'label churn starts' > ${ctl}; python3 ${py}; echo 'label churn ends' > ${ctl}; sleep 1`;
  execFileSync(binary, ["record", "-o", join(dir, "run.jsonl.zst"), "-i", "100ms", "--discrete", "--ctl", ctl, "--", "sh", "-c", script], { cwd: dir, stdio: "pipe" });
  const { url } = await serve(t, ["view", "run.jsonl.zst", "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#totals tbody tr");
  await page.waitForSelector('#labels li:has-text("churn ends")');
  await page.screenshot({ path: join(img, "view.png") });
}

// A busy process: 300 MiB, touched page by page in a loop.
const busy = `import time
b = bytearray(300 << 20)
end = time.time() + 60
while time.time() < end:
    for k in range(0, len(b), 4096): b[k] = (b[k] + 1) & 255
`;

async function processes() {
  const dir = tempDir(t);
  const f = join(dir, "busy.py");
  writeFileSync(f, busy);
  const w = spawn("python3", [f], { stdio: "ignore" });
  t.after(() => w.kill());
  const { url } = await serve(t, ["live", "--listen", "127.0.0.1:0", "-i", "1s", "--ctl", join(dir, "ctl")], dir);
  const page = await browser(t, { width: 1400, height: 1100 });
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('live')");
  await page.click("#tab-processes");
  // The busy python3 first, once rates have come (the first frame has none).
  await page.waitForFunction(
    (pid) => !document.querySelector("#proc-count").textContent.includes("first frame") && document.querySelector("#proc-table tbody tr[data-pid]")?.dataset.pid === String(pid),
    w.pid,
    { timeout: 30000 },
  );
  await page.click(`#proc-table tr[data-pid="${w.pid}"]`);
  await page.waitForSelector("#proc-detail:has-text('Threads (1)')", { timeout: 10000 });
  await page.waitForSelector("#proc-detail table.areas tbody tr", { timeout: 10000 });
  // Its threads' CPU% needs two reads of their stat: the next refreshes give it.
  await page.waitForFunction(
    () => [...document.querySelectorAll("#proc-detail table.threads tbody tr")].some((tr) => parseFloat(tr.children[2].textContent) > 0),
    null,
    { timeout: 10000 },
  );
  // The window, not the full page: the drill-down's ~100 memory areas would make it 3500 px tall.
  await page.screenshot({ path: join(img, "processes.png") });
}

async function experiment() {
  const dir = tempDir(t);
  writeFileSync(
    join(dir, "tiny.toml"),
    `name = "tiny"
command = "sleep 0.0{mb}; : {policy}"
replications = 2
seed = 3
interval = "5ms"
events = ["node.*.numa_hit", "node.*.MemFree"]
responses = ["wall_time", "rate:node.MemFree"]

[[factor]]
name = "policy"
levels = ["first-touch", "interleave"]

[[factor]]
name = "mb"
levels = [1, 4]
`,
  );
  execFileSync(binary, ["--root", twonode, "experiment", "tiny.toml"], { cwd: dir, stdio: "pipe" });
  const { url } = await serve(t, ["--root", twonode, "experiment", "tiny.toml", "--analyze", "--web", "--listen", "127.0.0.1:0"], dir);
  const page = await browser(t, { width: 1300, height: 900 });
  await page.goto(url);
  await page.waitForSelector("#report section.response");
  await page.screenshot({ path: join(img, "experiment.png"), fullPage: true });
}

try {
  for (const [name, f] of Object.entries({ live, view, processes, experiment })) {
    if (process.argv.length > 2 && !process.argv.includes(name)) continue;
    await f();
    console.log(`wrote ${join(img, name + ".png")}`);
  }
} finally {
  for (const f of cleanups.reverse()) await f();
}
