// Source files for the profile's Source page, from numascope view: a
// "source" request per file, answered by a "source" message or an "error"
// with the same id (docs/live-protocol.md). Requests in flight fail when the
// connection closes. The requests in flight are this module's own state.

import type { ClientMessage, ServerMessage } from "../protocol";
import type { SourceFetcher, SourceFile } from "./types";

/** The source requests in flight, by id. */
const waits = new Map<string, { resolve: (v: SourceFile) => void; reject: (e: Error) => void }>();
/** The last request id used. */
let last = 0;

/** serverSource fetches source files from numascope view with "source" requests; send is false when not connected. */
export function serverSource(send: (msg: ClientMessage) => boolean): SourceFetcher {
  return (file) =>
    new Promise((resolve, reject) => {
      const id = `source-${++last}`;
      waits.set(id, { resolve, reject });
      if (!send({ type: "source", id, file })) {
        waits.delete(id);
        reject(new Error("not connected to numascope: reload the page to reconnect"));
      }
    });
}

/** profileMessage takes the server's replies to source requests; false for any other message. */
export function profileMessage(m: ServerMessage): boolean {
  const id = "id" in m ? m.id : undefined;
  const w = typeof id === "string" ? waits.get(id) : undefined;
  if (!w || typeof id !== "string") return false;
  waits.delete(id);
  if (m.type === "source") w.resolve({ path: m.path, lines: m.lines });
  else w.reject(new Error(m.type === "error" ? m.error : `unexpected reply ${m.type}`));
  return true;
}

/** profileDisconnected fails the source requests in flight. */
export function profileDisconnected(reason: string): void {
  for (const w of waits.values()) w.reject(new Error(`the connection to numascope closed${reason ? ": " + reason : ""}; reload the page to reconnect`));
  waits.clear();
}
