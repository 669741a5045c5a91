// Fails, naming each circle, when the modules of web/src import each other in a circle (a imports
// b, ..., which imports a), type-only imports included: a circle means no module in it can be read,
// tested or moved without the others, and the client's layering (docs/web-client.md) is that every
// module depends only on ones below it. It reads the imports with TypeScript's own parser (import
// and export-from declarations, `import type` too; dynamic imports are not used in web/src) and
// resolves relative ones to .ts files. scripts/web-check runs it; `node no-cycles.mjs DIR` checks
// another tree (test/no-cycles.test.mjs does, to prove it finds a circle).
import ts from "typescript";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(process.argv[2] ?? "src");
const files = [];
const walk = (dir) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else if (p.endsWith(".ts") && !p.endsWith(".d.ts")) files.push(p);
  }
};
walk(root);
if (files.length === 0) {
  console.error(`web/no-cycles.mjs: no .ts file under ${root}: run it from web/`);
  process.exit(1);
}

/** resolveImport is the .ts file a relative specifier names, or null (a package, or CSS). */
function resolveImport(from, spec) {
  if (!spec.startsWith(".")) return null;
  const base = resolve(dirname(from), spec);
  for (const p of [base, `${base}.ts`, join(base, "index.ts")]) if (p.endsWith(".ts") && existsSync(p)) return p;
  return null;
}

/** The modules each module imports, in the order it imports them. */
const graph = new Map();
for (const f of files) {
  const sf = ts.createSourceFile(f, readFileSync(f, "utf8"), ts.ScriptTarget.Latest, false);
  const deps = [];
  for (const st of sf.statements) {
    const spec = (ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier) ? st.moduleSpecifier.text : null;
    const to = spec === null ? null : resolveImport(f, spec);
    if (to && !deps.includes(to)) deps.push(to);
  }
  graph.set(f, deps);
}

// Depth-first search: an edge back to a module on the current path closes a circle.
const name = (f) => relative(process.cwd(), f);
const state = new Map(); // 1: on the path, 2: done
const path = [];
const circles = [];
const visit = (f) => {
  state.set(f, 1);
  path.push(f);
  for (const d of graph.get(f) ?? []) {
    if (state.get(d) === 1) circles.push([...path.slice(path.indexOf(d)), d]);
    else if (!state.has(d)) visit(d);
  }
  path.pop();
  state.set(f, 2);
};
for (const f of [...graph.keys()].sort()) if (!state.has(f)) visit(f);

for (const c of circles) console.error(`import circle: ${c.map(name).join(" -> ")}`);
if (circles.length > 0) {
  console.error(`${name(root)} has ${circles.length} import circle(s) (above): move the types both sides need into a module of their own, or the state into the module that owns it`);
  process.exit(1);
}
console.error(`no import circles among ${files.length} modules under ${name(root) || "."}`);
