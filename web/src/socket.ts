// The sending side of the connection to numascope (docs/live-protocol.md):
// requests go out only while the websocket is open. The websocket and the
// request ids are this module's own state; src/connection.ts opens it.

import type { ClientMessage } from "./protocol";

let ws: WebSocket | null = null;
/** the last request id used */
let reqID = 0;

/** attach makes w the connection requests go out on. */
export function attach(w: WebSocket): void {
  ws = w;
}

/** detach forgets w when it closed; false when w is no longer the connection (it was replaced or closed on purpose). */
export function detach(w: WebSocket): boolean {
  if (ws !== w) return false;
  ws = null;
  return true;
}

/** send sends msg to the server; false when not connected. */
export function send(msg: ClientMessage): boolean {
  if (ws?.readyState !== WebSocket.OPEN) return false;
  ws.send(JSON.stringify(msg));
  return true;
}

/** disconnect closes the connection on purpose (a file was opened instead). */
export function disconnect(): void {
  if (ws) {
    const w = ws;
    ws = null;
    w.close();
  }
}

/** nextID is a fresh request id. */
export function nextID(): number {
  return ++reqID;
}

/** requestsSent is how many request ids were used (the tests count range requests with it). */
export function requestsSent(): number {
  return reqID;
}
