// The time-series view's state (live, a recording served by view, or a file): the samples
// shown and what the data says about itself, the live session's shared state, and how they are
// shown (summed or per node, as % of max, the series switched off, the time window). What only
// one module keeps between frames stays in that module: the plots in src/plots.ts, the totals in
// src/totals.ts, the range requests in src/range.ts, the connection in src/socket.ts. Who changes
// what: src/modes.ts switches to new data, src/connection.ts and src/range.ts bring samples and
// the session's state, src/view.ts moves the window and changes how they are shown, and the
// picker (src/panels.ts) and the legends (src/plots.ts) switch series off. The tests read this
// object (window.__numascope.samples).

import { Store } from "./data";
import type { State } from "./protocol";
import type { Described, Window } from "./types";

export interface Samples {
  /** the samples shown */
  store: Store;
  hello: Described | null;
  /** the live session's shared state */
  session: State;
  perNode: boolean;
  /** plot events with a known maximum as % of it */
  pct: boolean;
  /** series (and events) switched off, by key */
  hidden: Set<string>;
  /** follow the newest data (live) or the whole recording */
  follow: boolean;
  windowS: number;
  xr: Window;
  /** samples received (live) */
  received: number;
  /** the recording's duration (view) */
  duration: number;
}

export const samples: Samples = {
  store: new Store(),
  hello: null,
  session: { interval_s: 1, paused: false, discrete: false, events: [], recording: "" },
  perNode: false,
  pct: false,
  hidden: new Set(),
  follow: true,
  windowS: 60,
  xr: { min: 0, max: 60 },
  received: 0,
  duration: 0,
};
