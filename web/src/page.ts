// Which page is on screen: the one piece of state every page's modules may read (the
// time-series view draws differently for live, view and a file; the processes page polls only
// under live). src/modes.ts alone changes it, when it switches pages.

import type { Mode } from "./types";

let shown: Mode = "none";

/** mode is the page on screen. */
export function mode(): Mode {
  return shown;
}

/** setMode records the page switched to (src/modes.ts). */
export function setMode(m: Mode): void {
  shown = m;
}
