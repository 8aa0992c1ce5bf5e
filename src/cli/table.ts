import Table from "cli-table3";

/**
 * Rows as a table that fits the terminal: a header, no index column, no quoted strings; long
 * cells are cut with "…" so a row stays one line (`--json` has the full text). Column widths
 * come from the content, shrunk from the widest column first when the terminal is narrower.
 */
export function formatTable(
  rows: Record<string, unknown>[],
  width = process.stdout.columns ?? 120,
): string {
  const first = rows[0];
  if (!first) return "";
  const head = Object.keys(first);
  const cells = rows.map((r) =>
    head.map((h) => (r[h] === null || r[h] === undefined ? "" : String(r[h]))),
  );
  const widths = head.map(
    (h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? "").length)) + 2,
  );
  // Each column costs its width plus one separator; shrink the widest until it fits.
  while (widths.reduce((a, b) => a + b + 1, 1) > width) {
    const widest = widths.indexOf(Math.max(...widths));
    if ((widths[widest] ?? 0) <= 8) break;
    widths[widest] = (widths[widest] ?? 0) - 1;
  }
  const table = new Table({
    head,
    colWidths: widths,
    truncate: "…",
    wordWrap: false,
    style: { head: [], border: [], compact: true },
    chars: {
      top: "",
      "top-mid": "",
      "top-left": "",
      "top-right": "",
      bottom: "",
      "bottom-mid": "",
      "bottom-left": "",
      "bottom-right": "",
      left: "",
      "left-mid": "",
      mid: "",
      "mid-mid": "",
      right: "",
      "right-mid": "",
      middle: " ",
    },
  });
  table.push(...cells);
  return table
    .toString()
    .split("\n")
    .map((line) => line.trimEnd())
    .join("\n");
}
