// Reading untrusted JSON into typed values. Everything the client is given
// (the server's messages, a recording, profile or report loaded from disk)
// is parsed with these: a value of the wrong type is treated as absent, so
// the rest of the client can rely on its types. Strings stay strings: the
// client shows them as text (src/dom.ts), never as HTML.

/** A JSON object, read field by field. */
export type Obj = Readonly<Record<string, unknown>>;

/** isObj tells a JSON object from null, arrays and scalars. */
export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** obj is v when it is an object, else an empty one (so its fields read as absent). */
export function obj(v: unknown): Obj {
  return isObj(v) ? v : {};
}

/** num is v when it is a number (JSON has no NaN or infinities), else undefined. */
export function num(v: unknown): number | undefined {
  return typeof v === "number" ? v : undefined;
}

/** numOr is v when it is a number, else d. */
export function numOr(v: unknown, d: number): number {
  return typeof v === "number" ? v : d;
}

/** numOrNull is v when it is a number, else null (how the protocol writes a value it could not read). */
export function numOrNull(v: unknown): number | null {
  return typeof v === "number" ? v : null;
}

/** str is v when it is a string, else undefined. */
export function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** strOr is v when it is a string, else d. */
export function strOr(v: unknown, d: string): string {
  return typeof v === "string" ? v : d;
}

/** bool is v when it is a boolean, else undefined. */
export function bool(v: unknown): boolean | undefined {
  return typeof v === "boolean" ? v : undefined;
}

/** scalar is v when it is a string or a number (a name or number shown as text), else undefined. */
export function scalar(v: unknown): string | number | undefined {
  return typeof v === "string" || typeof v === "number" ? v : undefined;
}

/** list reads an array with f, leaving out the elements f rejects (undefined); not an array: []. */
export function list<T>(v: unknown, f: (x: unknown) => T | undefined): T[] {
  if (!Array.isArray(v)) return [];
  const out: T[] = [];
  for (const x of v) {
    const y = f(x);
    if (y !== undefined) out.push(y);
  }
  return out;
}

/** optList is list(v, f), or undefined when v is not an array (for fields whose absence means something). */
export function optList<T>(v: unknown, f: (x: unknown) => T | undefined): T[] | undefined {
  return Array.isArray(v) ? list(v, f) : undefined;
}

/** strings reads an array of strings, leaving out anything else. */
export function strings(v: unknown): string[] {
  return list(v, str);
}

/** numbers reads an array of numbers, leaving out anything else. */
export function numbers(v: unknown): number[] {
  return list(v, num);
}

/** record reads an object's values with f, leaving out those f rejects; not an object: {}. */
export function record<T>(v: unknown, f: (x: unknown) => T | undefined): Record<string, T> {
  const out: Record<string, T> = {};
  for (const [k, x] of Object.entries(obj(v))) {
    const y = f(x);
    if (y !== undefined) out[k] = y;
  }
  return out;
}

/** row reads a sample row [t, v1, ..., vN]: anything but a number is a missing value (null). */
export function row(v: unknown): (number | null)[] | undefined {
  return Array.isArray(v) ? v.map(numOrNull) : undefined;
}

/** errorText is the message of something thrown. */
export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
