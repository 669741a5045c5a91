// The profile pages: a profile written by `numascope profile` (served by
// `numascope view PROFILE.json`, or loaded from disk), as six pages behind
// tabs, one module each: the summary with the hints (summary.ts), the access
// matrix (matrix.ts), the threads with their pinning logs (threads.ts),
// functions and lines (code.ts), the annotated source (source.ts) and the
// memory (memory.ts). The format is docs/profile.md; every page reads it as
// it is, so the numbers on the page are the file's.
//
// Plain DOM tables: every view here is a table or a grid of counts, and
// tables stay searchable, selectable and copyable.

import type { Profile } from "../documents";
import { el } from "../dom";
import { codePage } from "./code";
import { matrixPage, miniMatrix } from "./matrix";
import { memoryPage } from "./memory";
import { sourcePage } from "./source";
import { summaryPage } from "./summary";
import { threadsPage } from "./threads";
import type { Page, ProfileContext, ProfileOptions } from "./types";

/** The pages' tabs, in order: which page and its label. */
const PAGES: readonly (readonly [Page, string])[] = [
  ["summary", "Summary"],
  ["matrix", "Access matrix"],
  ["threads", "Threads"],
  ["code", "Functions & lines"],
  ["source", "Source"],
  ["memory", "Memory"],
];

declare global {
  interface Window {
    /** the profile shown, for debugging and tests */
    __numascope_profile?: ProfileContext;
  }
}

/** renderProfile draws the profile pages of p into root and shows the summary. */
export function renderProfile(root: HTMLElement, p: Profile, o: ProfileOptions): ProfileContext {
  root.replaceChildren();
  const nav = el("nav", { class: "ptabs", role: "tablist" });
  const tabs = new Map<Page, HTMLButtonElement>();
  const pages = new Map<Page, HTMLElement>();
  root.append(nav);
  for (const [id, label] of PAGES) {
    const b = el("button", { "data-page": id, role: "tab" }, label);
    b.onclick = () => ctx.show(id);
    tabs.set(id, b);
    nav.append(b);
  }
  for (const [id] of PAGES) {
    const sec = el("section", { class: "ppage", "data-page": id });
    pages.set(id, sec);
    root.append(sec);
  }
  const page = (id: Page) => pages.get(id) ?? el("section");
  const ctx: ProfileContext = {
    p,
    o,
    show(id) {
      for (const [k, sec] of pages) sec.hidden = k !== id;
      for (const [k, b] of tabs) {
        b.classList.toggle("on", k === id);
        b.setAttribute("aria-selected", String(k === id));
      }
    },
    openSource: (file, line, heat) => source.open(file, line, heat),
  };
  const right = summaryPage(page("summary"), ctx);
  miniMatrix(right, matrixPage(page("matrix"), ctx), ctx);
  threadsPage(page("threads"), ctx);
  codePage(page("code"), ctx);
  const source = sourcePage(page("source"), ctx);
  memoryPage(page("memory"), ctx);
  ctx.show("summary");
  window.__numascope_profile = ctx;
  return ctx;
}
