// Fails, naming each place, when web/src uses the type `any` anywhere: the client reads what it
// is given into typed shapes (src/json.ts, src/protocol.ts, src/documents.ts), so a type names what
// a value is everywhere. It walks TypeScript's own syntax tree, so it finds every spelling
// (`Map<string, any>`, `type X = any`, `(x: any) =>`) and nothing in comments or names.
// scripts/web-check runs it.
import ts from "typescript";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const files = [];
const walk = (dir) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p);
    else if (p.endsWith(".ts")) files.push(p);
  }
};
walk("src");
let found = 0;
for (const f of files) {
  const sf = ts.createSourceFile(f, readFileSync(f, "utf8"), ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (node.kind === ts.SyntaxKind.AnyKeyword) {
      const { line, character } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
      console.error(`web/${f}:${line + 1}:${character + 1}: ${node.parent.getText(sf)}`);
      found++;
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}
if (files.length === 0) {
  console.error("web/no-any.mjs: no .ts file under web/src: run it from web/");
  process.exit(1);
}
if (found > 0) {
  console.error("web/src uses the type any (above): read the value into a typed shape instead");
  process.exit(1);
}
