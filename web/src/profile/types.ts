// The types the profile pages share: what every page is given (ProfileContext), the table
// column (Col), the keys tables sort by and the source is tinted by (Key), and source files and
// where they come from. They live here, below every page module, so that pages.ts can import
// the pages and the pages can name what pages.ts gives them without importing it back.

import type { Metric, Profile } from "../documents";

/** The six pages, in tab order. */
export type Page = "summary" | "matrix" | "threads" | "code" | "source" | "memory";

/** What tables sort by and the source is tinted by: a metric, or one derived from them. */
export type Key = Metric | "accesses" | "remote_pct" | "weight";

/** A source file as numascope view read it for the Source page: where, and its lines. */
export interface SourceFile {
  path: string;
  lines: string[];
}

/** Where source files come from: asks for file; resolves with its lines, rejects with the server's message. */
export type SourceFetcher = (file: string) => Promise<SourceFile>;

export interface ProfileOptions {
  file: string;
  /** numascope's hints (the server's; absent for a file from disk) */
  hints?: string[];
  sourcePath?: string[];
  /** where source files come from: the server (view), or nowhere (a file from disk) */
  fetch?: SourceFetcher;
}

/** What every page gets: the profile, the options, and the ways to move between pages. */
export interface ProfileContext {
  p: Profile;
  o: ProfileOptions;
  /** show switches to a page */
  show(page: Page): void;
  /** openSource shows file at line on the Source page, tinted by heat when given */
  openSource(file: string, line: number, heat?: Key): void;
}

/** A column of a profile table (table.ts). */
export interface Col<R> {
  key: string;
  label: string;
  title?: string;
  num?: boolean;
  /** sort value; also the cell's text when text is not given */
  get: (r: R) => number | string;
  text?: (r: R) => string;
  /** draws a bar behind numbers, relative to the column's largest */
  bar?: boolean;
}
