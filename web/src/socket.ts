// The sending side of the connection to numascope (docs/live-protocol.md):
// requests go out only while the websocket is open.

import { app } from "./state";
import type { ClientMessage } from "./protocol";

/** send sends msg to the server; false when not connected. */
export function send(msg: ClientMessage): boolean {
  if (app.ws?.readyState !== WebSocket.OPEN) return false;
  app.ws.send(JSON.stringify(msg));
  return true;
}

/** disconnect closes the connection on purpose (a file was opened instead). */
export function disconnect(): void {
  if (app.ws) {
    const ws = app.ws;
    app.ws = null;
    ws.close();
  }
}

/** nextID is a fresh request id. */
export function nextID(): number {
  return ++app.reqID;
}
