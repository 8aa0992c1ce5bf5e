import Table from "cli-table3";

/** A column that names something (an ID, a shop, a handle, a SKU…): never cut, it is copied. */
const IDENTIFIER = /^(id|shop|handle|sku|claim|event|order)$|id$/i;

/**
 * Text as it may go to a terminal: each control character (a line break, which would split a
 * table's row, or an escape sequence, which would recolour or rewrite the operator's screen) is
 * shown escaped, `\n` or `\u001b`; everything else is left as it is. For what the CLI prints
 * of text it did not write itself: dead-letter messages, the provider's answers, webhook bodies.
 */
export function printable(text: string): string {
  // \p{Cc}: U+0000–U+001F, U+007F–U+009F.
  return text.replace(
    /\p{Cc}/gu,
    (c) => ESCAPED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

const ESCAPED: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/**
 * The width a table must fit, or undefined for none: `COLUMNS` when set (as `ls` and `git` read
 * it), else the terminal's width; when stdout is not a terminal (a pipe, a file) rows are
 * printed whole, since nothing would wrap them and a cut cell cannot be read back.
 */
export function outputWidth(
  env: NodeJS.ProcessEnv = process.env,
  stdout: { isTTY?: boolean; columns?: number } = process.stdout,
): number | undefined {
  const columns = Number(env.COLUMNS);
  if (env.COLUMNS && Number.isInteger(columns) && columns > 0) return columns;
  return stdout.isTTY ? (stdout.columns ?? 80) : undefined;
}

export interface TableOptions {
  /** The width to fit (see {@link outputWidth}, the default); undefined prints rows whole. */
  width?: number | undefined;
  /** Columns never cut; by default the identifier-like ones (id, shop, handle, …Id, … ID). */
  keep?: (column: string) => boolean;
}

/**
 * Rows as a table: a header, no index column, no quoted strings, one line a row (cells
 * {@link printable}). On a terminal (or within
 * `COLUMNS`) long cells are cut with "…" so a row stays one line, shrinking the widest column
 * first; identifiers are never cut (`--json` has the full text). Piped, rows are whole.
 */
export function formatTable(
  rows: Record<string, unknown>[],
  options: TableOptions | number = {},
): string {
  const { width, keep = (column: string) => IDENTIFIER.test(column) } =
    typeof options === "number" ? { width: options } : { width: outputWidth(), ...options };
  if (rows.length === 0) return "";
  // Every row's keys, in order of first appearance: a column only some rows have still shows.
  const head = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cells = rows.map((r) =>
    head.map((h) => (r[h] === null || r[h] === undefined ? "" : printable(String(r[h])))),
  );
  const widths = head.map(
    (h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? "").length)) + 2,
  );
  if (width !== undefined) {
    const shrinkable = head.map((h) => !keep(h));
    // Each column costs its width plus one separator; shrink the widest cuttable one until it fits.
    while (widths.reduce((a, b) => a + b + 1, 1) > width) {
      const candidates = widths.map((w, i) => (shrinkable[i] ? w : 0));
      const widest = candidates.indexOf(Math.max(...candidates));
      if ((candidates[widest] ?? 0) <= 8) break;
      widths[widest] = (widths[widest] ?? 0) - 1;
    }
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
