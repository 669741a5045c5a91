// Building the page from data: every name in a recording, profile or report
// is the file's, so it goes into the page as text (a text node or an
// attribute value), never as HTML. This is the one way the client makes
// elements out of data; $ and input find the elements of index.html.

/** el makes a tag with attributes (set as values) and children; strings become text nodes. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...kids: (Node | string)[]): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...kids);
  return e;
}

/** $ is the element of index.html with this id. */
export function $(id: string): HTMLElement {
  const e = document.getElementById(id);
  if (!e) throw new Error(`index.html has no #${id}`);
  return e;
}

/** input is the input element of index.html with this id. */
export function input(id: string): HTMLInputElement {
  const e = $(id);
  if (!(e instanceof HTMLInputElement)) throw new Error(`#${id} is not an input`);
  return e;
}
