// The processes page of numascope live (issue 18) in real headless Chromium: the real live
// server (package live, its token, endpoints and shared refresh) with a fake process feed
// (bin/fakelive: internal/web/fakefeed, whose processes are made up), and bin/numascope live
// without a feed. Rows appear, a click on a header reorders them (the server sorts), the filter
// keeps the matching ones, a click on a row drills down, unknown values are "–" and a comm that
// is HTML stays text.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { repo, artifacts, tempDir, serve, browser, fakelive } from "./util.mjs";

const twonode = join(repo, "internal/sensor/testdata/twonode");
// fakefeed.Hostile: runs script if it is ever parsed as HTML.
const hostile = `<img src=x onerror="self['__pwned']='comm';document['title']='pwned'">`;

/** pids is the PIDs of the table's rows, in order. */
const pids = (page) => page.$$eval("#proc-table tbody tr[data-pid]", (trs) => trs.map((tr) => Number(tr.dataset.pid)));
/** cell is the text of a row's cell under the header named label. */
const cell = (page, pid, label) =>
  page.evaluate(
    ([pid, label]) => {
      const ths = [...document.querySelectorAll("#proc-table thead th")].map((th) => th.textContent);
      const i = ths.indexOf(label);
      if (i < 0) throw new Error(`no column ${label} in ${ths}`);
      return document.querySelector(`#proc-table tr[data-pid="${pid}"]`).children[i].textContent;
    },
    [pid, label],
  );
/** waitOrder waits until the rows are want, in order. */
async function waitOrder(page, want, what) {
  try {
    await page.waitForFunction((w) => JSON.stringify([...document.querySelectorAll("#proc-table tbody tr[data-pid]")].map((tr) => Number(tr.dataset.pid))) === JSON.stringify(w), want, { timeout: 5000 });
  } catch {
    assert.deepEqual(await pids(page), want, what);
  }
}

/** inert asserts that no payload ran or made an element. */
async function inert(page) {
  await page.waitForTimeout(300); // an <img src=x> fails to load asynchronously
  const r = await page.evaluate(() => ({
    title: document.title,
    pwned: self.__pwned ?? null,
    made: document.querySelectorAll('img[src="x"]').length,
    handlers: [...document.querySelectorAll("*")].flatMap((e) => [...e.attributes].filter((a) => /^on/i.test(a.name)).map((a) => `<${e.localName} ${a.name}>`)),
  }));
  assert.deepEqual(r, { title: "numascope", pwned: null, made: 0, handlers: [] }, "a hostile comm became HTML");
}

test("processes page: rows, sorting by header, filter, node view, source, drill-down, hostile comm inert", async (t) => {
  const dir = tempDir(t);
  const { url } = await serve(t, ["-root", twonode, "-every", "500ms"], dir, fakelive);
  const u = new URL(url);
  // The page shows other users' commands: no token, no processes.
  for (const path of ["/api/processes", "/api/processes/detail?pid=4242"]) {
    const r = await fetch(`${u.origin}${path}`);
    assert.equal(r.status, 401, `${path} without the token`);
  }
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('live')");
  assert.equal(await page.isVisible("#processes"), false, "the processes page is shown before its tab is clicked");
  await page.click("#tab-processes");
  await page.waitForSelector("#proc-table tbody tr[data-pid]");
  assert.equal(await page.isVisible("#plots"), false, "the samples stay on screen over the processes");

  // Default: remote faults first, the kernel thread (PID 5) hidden and counted; the note says the order.
  await page.waitForFunction(() => !document.querySelector("#proc-count").textContent.includes("first frame"));
  await waitOrder(page, [4242, 77, 666], "sorted by remote faults, no kernel thread");
  await page.waitForSelector("#proc-count:has-text('1 kernel thread hidden')");
  assert.equal(await page.textContent("#proc-sort-note"), "In remote order, largest first.");
  assert.equal(await page.getAttribute('#proc-table th[data-sort="remote"]', "class"), "num sortable sorted");
  // The checkbox shows it; it has no fault source, so it is last and its rates are "–".
  await page.check("#proc-kthreads");
  await waitOrder(page, [4242, 77, 666, 5], "with the kernel thread, sorted by remote faults");
  assert.equal(await page.getAttribute('#proc-table tr[data-pid="5"]', "data-kthread"), "1");
  assert.equal(await cell(page, 5, "remote/s"), "–", "a process without a fault source shows a rate");
  assert.equal(await cell(page, 5, "remote %"), "~78%", "without rates, the share of the balancer's recent faults, marked ~");
  assert.equal(await cell(page, 666, "mem N0"), "–", "memory per node not read shows a number");
  assert.equal(await cell(page, 666, "preferred"), "–", "no preferred node (-1) is shown as a node");
  assert.equal(await cell(page, 4242, "mem N0"), "1.8 GiB");
  assert.equal(await cell(page, 4242, "running"), "1");
  assert.equal(await cell(page, 4242, "remote %"), "99%");
  assert.match(await cell(page, 4242, "remote/s"), /^9\.0\dk$/);
  assert.equal(await cell(page, 4242, "RMA/s"), "6.25M", "the PMU columns are missing");
  assert.equal(await cell(page, 77, "RMA/s"), "–");
  assert.equal(await cell(page, 666, "command"), hostile, "the hostile comm is not shown literally");
  assert.equal(await cell(page, 666, "user"), hostile);

  // A click on a header sorts by its key (the server sorts); again: the other way.
  await page.click('#proc-table th[data-sort="pid"]');
  await waitOrder(page, [5, 77, 666, 4242], "sorted by PID");
  assert.equal(await page.getAttribute('#proc-table th[data-sort="pid"]', "data-dir"), "asc");
  await page.click('#proc-table th[data-sort="pid"]');
  await waitOrder(page, [4242, 666, 77, 5], "sorted by PID, descending");
  await page.click('#proc-table th[data-sort="local"]');
  await waitOrder(page, [77, 4242, 666, 5], "sorted by local faults");
  await page.click('#proc-table th[data-sort="cpu"]');
  await waitOrder(page, [4242, 77, 666, 5], "sorted by CPU");
  // The order holds over the next frames (the page asks for it each time). The page asks for
  // the next frame once it has shown the last: three more answers, so two more frames shown,
  // however long a loaded machine takes; a fixed 1.2 s could pass with none.
  for (let i = 0; i < 3; i++) await page.waitForResponse((r) => new URL(r.url()).pathname === "/api/processes");
  assert.deepEqual(await pids(page), [4242, 77, 666, 5]);
  const sortable = await page.$$eval("#proc-table th[data-sort]", (ths) => ths.map((th) => th.dataset.sort));
  assert.deepEqual(sortable.sort(), ["cpu", "local", "memory", "migrated", "pid", "remote"]);

  // The filter: command or PID.
  await page.fill("#proc-filter", "post");
  await waitOrder(page, [77], "filtered by command");
  await page.waitForSelector("#proc-count:has-text('1 of 4 processes match')");
  await page.fill("#proc-filter", "666");
  await waitOrder(page, [666], "filtered by PID");
  await page.fill("#proc-filter", "no such thing");
  await waitOrder(page, [], "filtered out");
  await page.waitForSelector("#proc-table td:has-text('no process matches the filter')");
  await page.fill("#proc-filter", "");
  await waitOrder(page, [4242, 77, 666, 5], "filter cleared");

  // The node view, migrations by reason, the source block with each missing line.
  const nodes = await page.$$eval("#proc-node-table tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.equal(nodes.length, 2);
  assert.deepEqual(nodes.map((r) => r.slice(0, 5)), [
    ["0", "0-1", "5.0 GiB", "3.0 GiB", "8.0 GiB"],
    ["1", "2-3", "2.0 GiB", "6.0 GiB", "8.0 GiB"],
  ]);
  const migrations = await page.$$eval("#proc-migration-table tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.deepEqual(migrations, [
    ["numa_misplaced", "320"],
    ["compaction", "7.00"],
  ]);
  const source = await page.textContent("#proc-source");
  assert.match(source, /faults\s*kprobe:task_numa_fault/);
  assert.match(source, /PMU\s*fake-offcore/);
  const missing = await page.$$eval("#proc-source .missing li", (lis) => lis.map((li) => li.textContent));
  assert.deepEqual(missing, ["cgroups: not asked for (--cgroup)", `PMU figures of ${hostile}: none`]);

  // Drill-down: threads, areas, the hint.
  await page.click('#proc-table tr[data-pid="4242"]');
  await page.waitForSelector("#proc-detail .hint");
  assert.equal(await page.textContent("#proc-detail .hint"), "90% of its memory is on node 0 while its threads run on node 1");
  const threads = await page.$$eval("#proc-detail table.threads tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.equal(threads.length, 4);
  assert.deepEqual(threads[1].slice(0, 3), ["4243", "worker-1", "60.0"]);
  assert.deepEqual(threads[1].slice(3, 6), ["2", "1", "0"]);
  assert.equal(threads[3][5], "–", "a thread without a preferred node");
  const areas = await page.$$eval("#proc-detail table.areas tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.deepEqual(areas[2], ["7f1000000000", "file", "/usr/lib/libc.so.6", "default", "–", "5.0 MiB"]);
  // numastat -p's rows per node: huge, heap, stack, private (files included), total.
  const cats = await page.$$eval("#proc-detail table.categories tbody tr", (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
  assert.deepEqual(cats, [
    ["huge", "0 B", "0 B", "0 B"],
    ["heap", "43.0 MiB", "43.0 MiB", "0 B"],
    ["stack", "0 B", "0 B", "0 B"],
    ["private", "2.0 GiB", "1.8 GiB", "205 MiB"],
    ["total", "2.0 GiB", "1.8 GiB", "205 MiB"],
  ]);
  // At 1400 px the table and the drill-down do not fit side by side: the drill-down goes under
  // the table, which keeps every column in view (the faults and REM% at its right end).
  const cut = () =>
    page.evaluate(() => {
      const box = document.getElementById("proc-table-box");
      const detail = document.getElementById("proc-detail").getBoundingClientRect();
      const table = box.getBoundingClientRect();
      return { hidden: box.scrollWidth - box.clientWidth, under: detail.top >= table.bottom, beside: detail.left >= table.right };
    });
  assert.deepEqual(await cut(), { hidden: 0, under: true, beside: false }, "drill-down at 1400 px");
  await page.screenshot({ path: join(artifacts, "processes.png"), fullPage: true });
  // Wide enough for both: beside the table, which is still whole; narrow again: under it.
  await page.setViewportSize({ width: 2200, height: 900 });
  await page.waitForFunction(() => !document.getElementById("proc-main").classList.contains("stacked"));
  assert.deepEqual(await cut(), { hidden: 0, under: false, beside: true }, "drill-down at 2200 px");
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.waitForFunction(() => document.getElementById("proc-main").classList.contains("stacked"));

  // The hostile process's drill-down: its name, path, hint and error are text.
  await page.click('#proc-table tr[data-pid="666"]');
  await page.waitForSelector("#proc-detail .hint:has-text('its memory is at')");
  assert.equal(await page.textContent("#proc-detail .hint"), `its memory is at ${hostile}`);
  const detail = await page.textContent("#proc-detail");
  assert.ok(detail.includes(`PID 666 · ${hostile}`), detail);
  assert.ok(detail.includes(`/tmp/${hostile}`), detail);
  assert.ok(detail.includes(`numa_maps of ${hostile}: permission denied`), detail);
  await inert(page);
  await page.click("#proc-detail .close");
  assert.equal(await page.isVisible("#proc-detail"), false);

  // Back to the samples: the plots are there again.
  await page.click("#tab-samples");
  assert.equal(await page.isVisible("#processes"), false);
  assert.equal(await page.isVisible("#plots"), true);
});

test("processes page without a feed says why", async (t) => {
  const dir = tempDir(t);
  const { url } = await serve(t, ["live", "--root", twonode, "--listen", "127.0.0.1:0", "-i", "100ms", "--ctl", join(dir, "ctl"), "-e", "node.numa_hit", "--processes=false"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('live')");
  await page.click("#tab-processes");
  await page.waitForSelector("#proc-notice:has-text('No process table here')");
  assert.match(await page.textContent("#proc-notice"), /--processes=false/);
  assert.equal(await page.$$eval("#proc-table tbody tr", (trs) => trs.length), 0, "a table without a feed");
  await page.click("#tab-samples");
});

// The real collector: live on this machine lists its processes. A sleep started here is found by
// its PID, and the Source block says which figures this kernel gives and which it does not. The
// default order is by a figure this machine measures (remote faults, else CPU%: the note says
// which), and no kernel thread comes before a busy process, with the kernel threads shown or not.
test("processes page reads this machine's processes", async (t) => {
  const { spawn } = await import("node:child_process");
  const sleeper = spawn("sleep", ["300"], { stdio: "ignore" });
  t.after(() => sleeper.kill());
  const busy = spawn("sh", ["-c", "while :; do :; done"], { stdio: "ignore" });
  t.after(() => busy.kill());
  const dir = tempDir(t);
  const { url } = await serve(t, ["live", "--listen", "127.0.0.1:0", "-i", "200ms", "--ctl", join(dir, "ctl"), "-e", "node.numa_hit"], dir);
  const page = await browser(t);
  await page.goto(url);
  await page.waitForSelector("#mode:has-text('live')");
  await page.click("#tab-processes");
  await page.waitForSelector("#proc-table tbody tr[data-pid]", { timeout: 15000 });
  assert.ok((await pids(page)).length > 3, "a machine has more than 3 processes");

  // The default sort: its column has values, and the note names it.
  await page.waitForFunction(() => !document.querySelector("#proc-count").textContent.includes("first frame"), null, { timeout: 15000 });
  const sorted = async () => {
    const key = await page.getAttribute("#proc-table th.sorted", "data-sort");
    const label = await page.textContent("#proc-table th.sorted");
    const values = await page.$$eval(
      "#proc-table tbody tr[data-pid]",
      (trs, label) => {
        const i = [...document.querySelectorAll("#proc-table thead th")].findIndex((th) => th.textContent === label);
        return trs.map((tr) => tr.children[i].textContent);
      },
      label,
    );
    return { key, values };
  };
  const { key, values } = await sorted();
  assert.ok(["remote", "cpu"].includes(key), `the default sort is ${key}`);
  assert.ok(values.some((v) => v !== "–"), `the default sort (${key}) has no values: ${values.slice(0, 10)}`);
  const note = await page.textContent("#proc-sort-note");
  assert.ok(note.startsWith(`In ${key} order, largest first`), note);
  if (key === "cpu") assert.match(note, /no process has remote faults measured here/);
  /** aboveBusy is the kernel threads shown above the busy loop (it must be shown). */
  const aboveBusy = async () => {
    await page.waitForSelector(`#proc-table tr[data-pid="${busy.pid}"]`, { timeout: 10000 });
    return page.$$eval(
      "#proc-table tbody tr[data-pid]",
      (trs, pid) => trs.slice(0, trs.findIndex((tr) => tr.dataset.pid === String(pid))).filter((tr) => tr.dataset.kthread).map((tr) => tr.textContent),
      busy.pid,
    );
  };
  assert.deepEqual(await aboveBusy(), [], "a kernel thread above a busy process");
  const hidden = await page.$$eval("#proc-table tbody tr[data-kthread]", (trs) => trs.length);
  assert.equal(hidden, 0, "kernel threads shown by default");
  const kthreads = Number((await page.textContent("#proc-count")).match(/(\d+) kernel threads? hidden/)?.[1] ?? 0);
  await page.check("#proc-kthreads");
  if (kthreads > 0) await page.waitForSelector("#proc-table tbody tr[data-kthread]");
  assert.deepEqual(await aboveBusy(), [], "with the kernel threads shown, one above a busy process");
  await page.uncheck("#proc-kthreads");
  await page.waitForFunction(() => !document.querySelector("#proc-table tbody tr[data-kthread]"));

  await page.fill("#proc-filter", String(sleeper.pid));
  await waitOrder(page, [sleeper.pid], "the filter by the sleep's PID");
  assert.equal(await cell(page, sleeper.pid, "command"), "sleep");
  // The drill-down's thread CPU% is a rate over two of its readings: the first shows it
  // unknown ("–"), never 0.0; the next measures the sleep's 0.0. An observer keeps the
  // first drawing's cell, which the next poll may replace before a check here could read it.
  await page.evaluate(() => {
    const box = document.getElementById("proc-detail");
    new MutationObserver((_, obs) => {
      const td = box.querySelector("table.threads tbody tr td:nth-child(3)");
      if (!td) return;
      window["__firstThreadCPU"] = td.textContent;
      obs.disconnect();
    }).observe(box, { childList: true, subtree: true });
  });
  await page.click(`#proc-table tr[data-pid="${sleeper.pid}"]`);
  await page.waitForSelector("#proc-detail:has-text('Threads (1)')", { timeout: 10000 });
  assert.equal(await page.evaluate(() => window["__firstThreadCPU"]), "–", "the first reading's thread CPU%");
  await page.waitForFunction(() => document.querySelector("#proc-detail table.threads tbody tr td:nth-child(3)")?.textContent === "0.0", null, { timeout: 10000 });
  const source = await page.textContent("#proc-source");
  assert.match(source, /memory per node/, "the Source block names the memory source");
  assert.match(source, /faults/, "the Source block names the fault source or says it is missing");
  await page.screenshot({ path: join(artifacts, "processes-real.png"), fullPage: true });
  await page.click("#tab-samples"); // stops the polling before the server stops
});
