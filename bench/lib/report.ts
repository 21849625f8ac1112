/** Benchmark results: rows of summarized samples, ratios, and their rendering as a table or JSON. */
import { type Summary, summarize } from './stats.ts';

export type Unit = 'ms' | 'MiB' | 'MiB/s';

export interface Row {
  bench: string;
  /** What was measured, e.g. 'daemon: create → exec true'. */
  label: string;
  unit: Unit;
  stats: Summary;
  /** p50 must be at or below this to meet the target. */
  target?: number;
}

export interface Ratio {
  bench: string;
  label: string;
  /** p50 of `of` divided by p50 of `against`, both measured in this run. */
  value: number;
}

export interface BenchResult {
  rows: Row[];
  ratios: Ratio[];
  notes: string[];
}

export const emptyResult = (): BenchResult => ({ rows: [], ratios: [], notes: [] });

export function row(bench: string, label: string, unit: Unit, samples: number[], target?: number): Row {
  return { bench, label, unit, stats: summarize(samples), ...(target === undefined ? {} : { target }) };
}

export function ratio(bench: string, label: string, of: Row, against: Row): Ratio {
  return { bench, label, value: of.stats.p50 / against.stats.p50 };
}

const fmt = (v: number, unit: Unit) =>
  Number.isNaN(v) ? '-' : unit === 'MiB' ? v.toFixed(2) : v < 10 ? v.toFixed(2) : v.toFixed(1);

function pad(cells: string[][]): string {
  const widths = cells[0]?.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length))) ?? [];
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === 0 || i === 1 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
        .join('  '),
    )
    .join('\n');
}

export function renderTable(results: BenchResult[]): string {
  const header = ['benchmark', 'measurement', 'n', 'p50', 'p90', 'min', 'max', 'unit', 'target', ''];
  const cells = [header];
  for (const r of results.flatMap((x) => x.rows)) {
    const s = r.stats;
    const verdict = r.target === undefined ? '' : s.p50 <= r.target ? 'ok' : 'MISSED';
    cells.push([
      r.bench,
      r.label,
      String(s.n),
      fmt(s.p50, r.unit),
      fmt(s.p90, r.unit),
      fmt(s.min, r.unit),
      fmt(s.max, r.unit),
      r.unit,
      r.target === undefined ? '' : `≤ ${r.target}`,
      verdict,
    ]);
  }
  const out = [pad(cells)];
  const ratios = results.flatMap((x) => x.ratios);
  if (ratios.length > 0) {
    out.push('', 'ratios (p50 / p50, measured in the same run):');
    for (const q of ratios) out.push(`  ${q.bench}: ${q.label} = ${q.value.toFixed(3)}`);
  }
  const notes = results.flatMap((x) => x.notes);
  if (notes.length > 0) out.push('', 'notes:', ...notes.map((n) => `  - ${n}`));
  return out.join('\n');
}
