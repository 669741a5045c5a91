// Numbers as the page shows them: the one set of formatters every view uses.
// "–" stands for a value that is missing or could not be computed.

/** si formats a rate or level compactly with an SI suffix (1.52k, 3.4G), for plots and totals. */
export function si(v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  const a = Math.abs(v);
  if (a >= 1e15) return v.toExponential(2);
  for (const [d, s] of [
    [1e12, "T"],
    [1e9, "G"],
    [1e6, "M"],
    [1e3, "k"],
  ] as const) {
    if (a >= d) return (v / d).toFixed(a / d >= 100 ? 0 : a / d >= 10 ? 1 : 2) + s;
  }
  if (a === 0 || a >= 100) return v.toFixed(0);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(3);
}

/** num formats a statistic with about four significant digits (exponents for the very large and small), for reports. */
export function num(v: number | null | undefined): string {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : "-∞";
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(3).replace(/\.?0+e/, "e");
  if (a === Math.trunc(a)) return String(v);
  return String(+v.toPrecision(4));
}

/** int formats a count with thousands separators. */
export function int(v: number): string {
  return Math.round(v).toLocaleString("en-US");
}

/** count is a count and its noun in agreement: "1 process", "2 processes", "0 processes". */
export function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** bytes formats a size in binary units. */
export function bytes(v: number): string {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (v >= 1024 && i < u.length - 1) {
    v /= 1024;
    i++;
  }
  return i ? `${v.toFixed(v >= 100 ? 0 : 1)} ${u[i]}` : `${v} B`;
}

/** gib formats bytes as GiB with one decimal, without the unit (a table's column says it). */
export function gib(v: number): string {
  return (v / 2 ** 30).toFixed(1);
}

/** share formats a as a percentage of b (one decimal under 1 %); "–" when b is 0. */
export function share(a: number, b: number): string {
  if (!b) return "–";
  const p = (100 * a) / b;
  return (p > 0 && p < 1 ? p.toFixed(1) : p.toFixed(0)) + "%";
}

/** percent formats a percentage with one decimal ("12.5%"); "–" when it is not finite. */
export function percent(v: number): string {
  return Number.isFinite(v) ? `${v.toFixed(1)}%` : "–";
}

/** interval formats a sampling interval as the server parses one: 1s, 100ms, 250us. */
export function interval(s: number): string {
  if (s >= 1) return `${+s.toFixed(3)}s`;
  if (s >= 1e-3) return `${+(s * 1e3).toFixed(3)}ms`;
  return `${+(s * 1e6).toFixed(0)}us`;
}

/**
 * ranges lists CPUs or nodes with consecutive runs collapsed, in the given
 * order: [0, 1, 2, 5] is "0-2,5". Anything but a number (a file from disk
 * may hold anything) is listed as it is. "" when empty.
 */
export function ranges(xs: readonly (number | string)[]): string {
  const out: string[] = [];
  for (let i = 0; i < xs.length; ) {
    let j = i;
    while (j + 1 < xs.length && typeof xs[j] === "number" && xs[j + 1] === (xs[j] as number) + 1) j++;
    out.push(j > i ? `${xs[i]}-${xs[j]}` : `${xs[i]}`);
    i = j + 1;
  }
  return out.join(",");
}

/** base is a path's last element. */
export function base(path: string): string {
  const i = path.lastIndexOf("/");
  return i < 0 ? path : path.slice(i + 1);
}
