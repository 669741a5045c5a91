// Series colours: a palette made for categorical data (Okabe-Ito, then
// Tableau 10 for plots with more series), handed out so that every two
// series drawn in one plot are at least minDeltaE apart in CIE76 ΔE (the
// Euclidean distance in CIELAB). Colours that close look alike (an orange
// and a slightly redder orange), and a legend cannot tell them apart.

/**
 * The candidates in the order they are tried: Okabe-Ito (its yellow last: faint on white),
 * then Tableau 10. Within each palette every pair is at least 25 apart; across them some
 * are not, which is why each plot picks greedily (pickColors).
 */
export const palette = [
  "#0072B2", // blue
  "#D55E00", // vermillion
  "#009E73", // bluish green
  "#CC79A7", // reddish purple
  "#E69F00", // orange
  "#56B4E9", // sky blue
  "#000000", // black
  "#F0E442", // yellow
  "#4e79a7",
  "#f28e2b",
  "#e15759",
  "#76b7b2",
  "#59a14f",
  "#edc948",
  "#b07aa1",
  "#ff9da7",
  "#9c755f",
  "#bab0ac",
];

/** The least CIE76 ΔE between two series of one plot. */
export const minDeltaE = 20;

/** lab converts "#rrggbb" (sRGB) to CIELAB under D65. */
export function lab(hex: string): [number, number, number] {
  const ch = (i: number) => {
    const c = parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const r = ch(1),
    g = ch(3),
    b = ch(5);
  const x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047;
  const y = 0.2126 * r + 0.7152 * g + 0.0722 * b;
  const z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883;
  const f = (t: number) => (t > 216 / 24389 ? Math.cbrt(t) : ((24389 / 27) * t + 16) / 116);
  const fx = f(x),
    fy = f(y),
    fz = f(z);
  return [116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)];
}

/** deltaE is the CIE76 colour difference of two "#rrggbb" colours. */
export function deltaE(a: string, b: string): number {
  const p = lab(a),
    q = lab(b);
  return Math.hypot(p[0] - q[0], p[1] - q[1], p[2] - q[2]);
}

const far = (c: string, used: string[]) => used.every((u) => deltaE(c, u) >= minDeltaE);

/**
 * pickColor gives one more series of a plot its colour: preferred (the colour its event has
 * elsewhere, so that an event keeps its colour across small multiples) when that is far
 * enough from the colours the plot already uses, else the first candidate that is; null when
 * none is (the plot is full: its caller starts another).
 */
export function pickColor(used: string[], preferred?: string): string | null {
  if (preferred && far(preferred, used)) return preferred;
  return palette.find((c) => far(c, used)) ?? null;
}

/** distinctColors gives n series of one plot their colours; past what the palette allows they repeat. */
export function distinctColors(n: number): string[] {
  const out: string[] = [];
  let cycle: string[] = [];
  for (let i = 0; i < n; i++) {
    let c = pickColor(cycle);
    if (c === null) {
      cycle = [];
      c = palette[0];
    }
    cycle.push(c);
    out.push(c);
  }
  return out;
}
