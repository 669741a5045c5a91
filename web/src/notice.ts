// The page's two lines of news: the status at the right of the bar, and the
// error line under the controls (empty: hidden).

import { $ } from "./dom";

/** showError shows msg on the error line; "" hides it. */
export function showError(msg: string): void {
  const e = $("error");
  e.textContent = msg;
  e.hidden = !msg;
}

/** setStatus sets the status text. */
export function setStatus(msg: string): void {
  $("status").textContent = msg;
}
