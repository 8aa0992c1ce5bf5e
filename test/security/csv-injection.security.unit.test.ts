import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parse } from "csv-parse/sync";
import { describe, expect, it } from "vitest";
import {
  registrationCsvHeader,
  registrationCsvRow,
} from "../../src/features/registrations/index.ts";
import { safeCsvCell } from "../../src/lib/csv.ts";
import type { Registration } from "../../src/provider/index.ts";

/**
 * CSV injection (OWASP): a registration's customer-typed fields end up in the registrations CSV
 * (the settings download and `connector registrations list --csv`). A spreadsheet splits rows on
 * a bare LF or CR as well as on CRLF, and runs a cell starting with `=`, `+`, `-`, `@`, `|`, a tab
 * or a CR.
 */
const registration = (customerName: string): Registration => ({
  registrationId: 7,
  storeId: 1001,
  externalId: "REG-7",
  customerEmail: "ann@example.com",
  customerName,
  channelName: "web",
  emailMarketingConsent: false,
  lineItems: [],
  claims: [],
});

/** How a spreadsheet reads the file: a record ends at CRLF, LF or CR outside quotes. */
const asSpreadsheet = (csv: string) =>
  parse(csv, { record_delimiter: ["\r\n", "\n", "\r"] }) as string[][];

const FORMULA_START = /^[=+\-@|\t\r]/;

describe("registrations CSV", () => {
  it.each([
    ["a bare LF", "\n=3+3", "\n'=3+3"],
    ["a bare CR", "\r=2+2", "'\r'=2+2"],
    ["CRLF", "Ann\r\n@SUM(A1)", "Ann\r\n'@SUM(A1)"],
    ["a pipe", "|calc!A1", "'|calc!A1"],
    ["a later line's pipe", "Ann\n|calc", "Ann\n'|calc"],
    ["a tab", "\t=1", "'\t=1"],
  ])("keeps a name with %s in its one cell, every line of it defused", (_, name, shown) => {
    const csv = registrationCsvHeader() + registrationCsvRow(registration(name));
    const rows = asSpreadsheet(csv);
    expect(rows).toHaveLength(2);
    const [header, row] = rows;
    const cell = row?.[header?.indexOf("Customer name") ?? -1];
    expect(cell).toBe(shown);
    for (const line of (cell ?? "").split(/\r\n|\r|\n/)) expect(line).not.toMatch(FORMULA_START);
  });

  it("quotes any cell holding CR or LF and leaves plain cells as they are", () => {
    expect(safeCsvCell("-5")).toBe("'-5");
    expect(safeCsvCell(-5)).toBe("-5");
    expect(safeCsvCell("Ann O'Neil")).toBe("Ann O'Neil");
    const line = registrationCsvRow(registration("Ann\nLee"));
    expect(line).toContain('"Ann\nLee"');
    expect(line.endsWith("\r\n")).toBe(true);
    expect(line.slice(0, -2)).not.toMatch(/(^|,)[^",]*[\r\n]/);
  });

  it("is the only place that writes CSV: every writer goes through lib/csv.ts", () => {
    const root = join(import.meta.dirname, "../../src");
    const files = readdirSync(root, { recursive: true, encoding: "utf8" })
      .filter((f) => /\.tsx?$/.test(f))
      .map((f) => join(root, f));
    const writers = files.filter((f) => /from "csv-stringify/.test(readFileSync(f, "utf8")));
    expect(writers.map((f) => relative(root, f))).toEqual(["lib/csv.ts"]);
    // Whatever answers text/csv builds its lines from the registration view's safe rows.
    const csvRoutes = files.filter((f) => readFileSync(f, "utf8").includes("text/csv"));
    for (const f of csvRoutes) {
      const text = readFileSync(f, "utf8");
      expect(text, relative(root, f)).toMatch(/registrationCsv(Row|Header)|csvLine/);
    }
  });
});
