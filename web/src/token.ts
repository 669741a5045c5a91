// The token every numascope server wants (docs/live-protocol.md). It must
// never be in a cookie: cookies are per host, not per port, so the browser
// would hand it to every other server on 127.0.0.1, another local user's
// included (issue 28). The page takes it from the printed URL's ?token=
// into sessionStorage, which belongs to this scheme, host and port (and
// this tab) alone, removes it from the address bar, and sends it in an
// "Authorization: Bearer" header on fetches and as a websocket subprotocol
// (a browser cannot set headers on a websocket). Reloading the bare address
// in the same tab finds it again; a fresh tab asks for it (askToken).

import { el } from "./dom";

const key = "numascope-token";

/** Subprotocol is what the server echoes; tokenPrefix+token carries the token and is never echoed. */
const subprotocol = "numascope";
const tokenPrefix = "numascope.token.";

/** memory holds the token where sessionStorage is refused (storage turned off). */
let memory = "";

/** validToken: the characters numascope allows in a token, all of them valid in a subprotocol. */
function validToken(t: string): boolean {
  return /^[A-Za-z0-9._~-]+$/.test(t);
}

function store(t: string): void {
  memory = t;
  try {
    sessionStorage.setItem(key, t);
  } catch {
    // no storage: this page load keeps it in memory
  }
}

/** token is the token this tab holds, "" when none. */
export function token(): string {
  try {
    return sessionStorage.getItem(key) ?? memory;
  } catch {
    return memory;
  }
}

/**
 * takeToken moves ?token= from the address into sessionStorage and out of
 * the address bar (and so out of the history and of bookmarks). It runs
 * once, before anything connects.
 */
export function takeToken(): void {
  if (location.protocol !== "http:" && location.protocol !== "https:") return;
  const u = new URL(location.href);
  if (!u.searchParams.has("token")) return;
  const t = u.searchParams.get("token") ?? "";
  if (validToken(t)) store(t);
  u.searchParams.delete("token");
  history.replaceState(history.state, "", u.pathname + u.search + u.hash);
}

/** authHeaders are the headers that carry the token on a fetch. */
export function authHeaders(): Record<string, string> {
  const t = token();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

/** wsProtocols are the subprotocols a websocket offers: the token rides in the second. */
export function wsProtocols(): string[] {
  const t = token();
  return t && validToken(t) ? [subprotocol, tokenPrefix + t] : [subprotocol];
}

/**
 * askToken shows a small form asking for the token, saying why (as text:
 * nothing in it is HTML), and calls retry once one is given. The token may
 * be pasted alone or as the whole URL numascope printed.
 */
export function askToken(why: string, retry: () => void): void {
  document.getElementById("token-form")?.remove();
  const field = el("input", { id: "token-input", type: "password", autocomplete: "off", spellcheck: "false", size: "40", placeholder: "token, or the URL numascope printed", "aria-label": "token" });
  const problem = el("span", { class: "token-problem" });
  const form = el(
    "form",
    { id: "token-form", role: "dialog", "aria-label": "numascope needs its token" },
    el("p", {}, why),
    field,
    el("button", { type: "submit" }, "connect"),
    problem,
  );
  form.onsubmit = (e) => {
    e.preventDefault();
    let t = field.value.trim();
    if (t.includes("token=")) {
      try {
        t = new URL(t, location.href).searchParams.get("token") ?? "";
      } catch {
        t = "";
      }
    }
    if (!validToken(t)) {
      problem.textContent = "a token holds only letters, digits and - . _ ~; paste it, or the whole URL numascope printed";
      return;
    }
    store(t);
    form.remove();
    retry();
  };
  const err = document.getElementById("error");
  if (err) err.after(form);
  else document.body.prepend(form);
  field.focus();
}
