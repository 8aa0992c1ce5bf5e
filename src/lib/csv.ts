import { stringify } from "csv-stringify/sync";

/**
 * Every CSV the connector writes goes through here (the registrations download and the CLI's
 * `--csv`): cells are customers' own words, opened later in a spreadsheet.
 *
 * - A line of a cell starting with `=`, `+`, `-`, `@`, `|`, a tab or a carriage return gets a
 *   leading `'`, so a spreadsheet shows it as text instead of running it (OWASP's CSV injection
 *   list). Every line, not only the first: a spreadsheet that splits a cell on a line break
 *   would otherwise start a formula on the next row.
 * - A cell holding a CR or an LF anywhere is quoted. csv-stringify quotes a cell holding the
 *   record delimiter (CRLF), but not a lone `\n` or `\r`, which spreadsheets read as a new row.
 */
export type CsvValue = string | number | boolean | null | undefined;

/** The characters a spreadsheet may run as (part of) a formula when they start a line. */
const FORMULA_STARTS = new Set(["=", "+", "-", "@", "|", "\t", "\r"]);

export function safeCsvCell(value: CsvValue): string {
  if (value === null || value === undefined) return "";
  if (typeof value !== "string") return String(value);
  let out = "";
  let lineStart = true;
  for (let i = 0; i < value.length; i++) {
    const ch = value.charAt(i);
    if (lineStart && FORMULA_STARTS.has(ch)) out += "'";
    out += ch;
    // A line ends at LF, or at a CR not followed by LF (CRLF ends it at its LF).
    lineStart = ch === "\n" || (ch === "\r" && value.charAt(i + 1) !== "\n");
  }
  return out;
}

const CSV_OPTIONS = {
  record_delimiter: "windows",
  // Quote any cell holding a line break of any kind (RFC 4180 fields), not only CRLF.
  quoted_match: /[\r\n]/,
} as const;

/** One CSV line (RFC 4180: CRLF-terminated), each cell made safe first. */
export function csvLine(cells: readonly CsvValue[]): string {
  return stringify([cells.map(safeCsvCell)], CSV_OPTIONS);
}
