// web/no-cycles.mjs, the check that the modules of web/src import each other in no circle: it
// passes on web/src, and fails, naming the circle, on trees that have one (a type-only import
// and an export-from count as imports: the circles issue 33 found were type imports).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { webDir } from "./util.mjs";

const check = (dir) => spawnSync(process.execPath, ["no-cycles.mjs", ...(dir ? [dir] : [])], { cwd: webDir, encoding: "utf8" });

/** tree writes files (path: source) under a fresh temporary directory and returns it. */
function tree(t, files) {
  const dir = mkdtempSync(join(tmpdir(), "numascope-cycles-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  for (const [p, src] of Object.entries(files)) {
    mkdirSync(join(dir, p, ".."), { recursive: true });
    writeFileSync(join(dir, p), src);
  }
  return dir;
}

test("web/src has no import circle", () => {
  const r = check();
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /no import circles among \d+ modules/);
});

/** failsNaming checks a tree of files, which must fail the check with a line that circle matches; it returns what the check printed. */
function failsNaming(t, files, circle) {
  const r = check(tree(t, files));
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, circle);
  return r.stderr;
}

test("a circle through a type-only import fails the check, named", (t) => {
  const stderr = failsNaming(
    t,
    {
      "pages.ts": 'import { page } from "./sub/page";\nexport interface Context { n: number }\nexport const all = [page];\n',
      "sub/page.ts": 'import type { Context } from "../pages";\nexport const page = (c: Context) => c.n;\n',
      "leaf.ts": "export const x = 1;\n",
    },
    /import circle: \S*pages\.ts -> \S*sub\/page\.ts -> \S*pages\.ts/,
  );
  assert.doesNotMatch(stderr, /leaf/);
});

test("a longer circle through export-from fails the check", (t) => {
  failsNaming(
    t,
    {
      "a.ts": 'export { b } from "./b";\nexport const a = 1;\n',
      "b.ts": 'import { c } from "./c";\nexport const b = c;\n',
      "c.ts": 'import { a } from "./a";\nexport const c = a;\n',
    },
    /import circle: \S*a\.ts -> \S*b\.ts -> \S*c\.ts -> \S*a\.ts/,
  );
});

test("imports without a circle pass", (t) => {
  const dir = tree(t, {
    "main.ts": 'import "./style.css";\nimport uPlot from "uplot";\nimport { a } from "./a";\nimport type { T } from "./types";\nexport const m: T = a + String(uPlot);\n',
    "a.ts": 'import type { T } from "./types";\nexport const a: T = "";\n',
    "types.ts": "export type T = string;\n",
  });
  const r = check(dir);
  assert.equal(r.status, 0, r.stderr);
});
