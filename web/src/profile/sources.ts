// Source files for the profile's Source page, from numascope view: a
// "source" request per file, answered by a "source" message or an "error"
// with the same id (docs/live-protocol.md). Requests in flight fail when the
// connection closes.

import type { ClientMessage, ServerMessage } from "../protocol";
import { app, type SourceFile } from "../state";

export type { SourceFile };

/** Where source files come from: asks for file; resolves with its lines, rejects with the server's message. */
export type SourceFetcher = (file: string) => Promise<SourceFile>;

/** serverSource fetches source files from numascope view with "source" requests; send is false when not connected. */
export function serverSource(send: (msg: ClientMessage) => boolean): SourceFetcher {
  return (file) =>
    new Promise((resolve, reject) => {
      const waits = app.sources.waits;
      const id = `source-${++app.sources.last}`;
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
  const w = typeof id === "string" ? app.sources.waits.get(id) : undefined;
  if (!w || typeof id !== "string") return false;
  app.sources.waits.delete(id);
  if (m.type === "source") w.resolve({ path: m.path, lines: m.lines });
  else w.reject(new Error(m.type === "error" ? m.error : `unexpected reply ${m.type}`));
  return true;
}

/** profileDisconnected fails the source requests in flight. */
export function profileDisconnected(reason: string): void {
  const waits = app.sources.waits;
  for (const w of waits.values()) w.reject(new Error(`the connection to numascope closed${reason ? ": " + reason : ""}; reload the page to reconnect`));
  waits.clear();
}
