import { createHash } from "node:crypto";
import { CsvError, parse } from "csv-parse/sync";
import type { z } from "zod";
import { ProductCreate } from "../../provider/index.ts";
import { priceProblem } from "./price.ts";
import type { FileProblem } from "./repository.ts";

// A file's problems are kept with its import record (repository.ts), so the type lives there.
export type { FileProblem };

/** One product of the file: a group of CSV rows, or one JSON item. */
export interface FileProduct {
  /** 0-based order in the file. */
  position: number;
  /** The line the product starts on. */
  line: number;
  handle: string;
  /** The write body, or null when the product is invalid (see `problems`). */
  body: ProductCreate | null;
  problems: FileProblem[];
  /** The SKUs of its variants (for the Shopify check), with the line each is on. */
  skus: { sku: string; line: number }[];
}

export interface ProductFile {
  format: "csv" | "json";
  /** sha256 of the file's bytes: the same file resumes the same import. */
  digest: string;
  products: FileProduct[];
  /** Problems of the whole file (a bad header, JSON that does not parse): nothing imports. */
  fileProblems: FileProblem[];
}

export type ProductFileFormat = "csv" | "json";

/** The format from the file's name, or null when it is neither. */
export function formatOf(name: string): ProductFileFormat | null {
  const lower = name.toLowerCase();
  if (lower.endsWith(".csv")) return "csv";
  if (lower.endsWith(".json")) return "json";
  return null;
}

export function parseProductFile(text: string, format: ProductFileFormat): ProductFile {
  const digest = createHash("sha256").update(text).digest("hex");
  const parsed = format === "csv" ? parseCsv(text) : parseJson(text);
  const products = parsed.products;
  // Handles are the provider's identity key: one product per handle in a file.
  const seen = new Map<string, FileProduct>();
  for (const product of products) {
    const key = product.handle.toLowerCase();
    const first = seen.get(key);
    if (product.handle !== "" && first) {
      product.problems.push({
        line: product.line,
        field: "handle",
        handle: product.handle,
        message:
          format === "csv"
            ? `"${product.handle}" is used again after other products (first at line ${first.line}): keep a product's rows together`
            : `"${product.handle}" is used by another item too (line ${first.line}): one item per handle`,
      });
      product.body = null;
    } else if (product.handle !== "") seen.set(key, product);
  }
  return { format, digest, products, fileProblems: parsed.fileProblems };
}

// ---------------------------------------------------------------------------------------------
// CSV: one row per variant, rows sharing a handle form one product (Shopify's product CSV).

const PRODUCT_COLUMNS = [
  "handle",
  "title",
  "vendor",
  "product_type",
  "tags",
  "status",
  "image_url",
] as const;
const VARIANT_COLUMNS = [
  "option1_name",
  "option1_value",
  "option2_name",
  "option2_value",
  "option3_name",
  "option3_value",
  "sku",
  "barcode",
  "grams",
  "price",
  "compare_at_price",
  "unit_cost",
  "variant_image_url",
] as const;
export const CSV_COLUMNS: readonly string[] = [...PRODUCT_COLUMNS, ...VARIANT_COLUMNS];

type Row = Record<string, string>;
interface CsvRow {
  line: number;
  cells: Row;
}

function parseCsv(text: string): { products: FileProduct[]; fileProblems: FileProblem[] } {
  let records: { record: Row; info: { lines: number } }[];
  try {
    records = parse(text, {
      bom: true,
      columns: (header: string[]) => header.map((h) => h.trim().toLowerCase()),
      info: true,
      skip_empty_lines: true,
      trim: true,
    });
  } catch (error) {
    if (!(error instanceof CsvError)) throw error;
    const line = (error as CsvError & { lines?: number }).lines ?? null;
    return {
      products: [],
      fileProblems: [{ line, field: "", message: `the CSV does not parse: ${csvReason(error)}` }],
    };
  }
  const header = Object.keys(records[0]?.record ?? {});
  const unknown = header.filter((h) => !CSV_COLUMNS.includes(h));
  const fileProblems: FileProblem[] = [];
  if (records.length === 0) {
    fileProblems.push({ line: null, field: "", message: "the file has no product rows" });
  }
  if (records.length > 0 && !header.includes("handle")) {
    fileProblems.push({ line: 1, field: "handle", message: "the header has no handle column" });
  }
  for (const column of unknown) {
    fileProblems.push({
      line: 1,
      field: column,
      message: `unknown column "${column}" (the columns are ${CSV_COLUMNS.join(", ")})`,
    });
  }
  if (fileProblems.length > 0) return { products: [], fileProblems };

  // A record's line is where it starts: where it ends, less the line breaks inside its cells.
  const rows: CsvRow[] = records.map(({ record, info }) => ({
    line:
      info.lines -
      Object.values(record).reduce((n, value) => n + (value.match(/\n/g)?.length ?? 0), 0),
    cells: record,
  }));
  const groups: CsvRow[][] = [];
  for (const row of rows) {
    const last = groups.at(-1);
    const handle = row.cells.handle ?? "";
    if (last && handle === (last[0]?.cells.handle ?? "")) last.push(row);
    else groups.push([row]);
  }
  return { products: groups.map((group, position) => csvProduct(group, position)), fileProblems };
}

function csvReason(error: CsvError): string {
  const messages: Record<string, string> = {
    CSV_RECORD_INCONSISTENT_COLUMNS: "a row has more or fewer cells than the header",
    CSV_QUOTE_NOT_CLOSED: "a quoted cell is not closed",
    CSV_INVALID_CLOSING_QUOTE: 'a quote inside a quoted cell must be doubled ("")',
  };
  return messages[error.code] ?? error.message;
}

const CSV_FIELD: Record<string, string> = {
  productType: "product_type",
  imageUrl: "image_url",
  compareAtPrice: "compare_at_price",
  unitCost: "unit_cost",
};
const VARIANT_CSV_FIELD: Record<string, string> = {
  ...CSV_FIELD,
  imageUrl: "variant_image_url",
  options: "options",
};

function csvProduct(group: CsvRow[], position: number): FileProduct {
  const first = group[0] as CsvRow;
  const cell = (row: CsvRow, column: string) => row.cells[column] ?? "";
  const handle = cell(first, "handle");
  const problems: FileProblem[] = [];
  const problem = (line: number, field: string, message: string) =>
    problems.push({ line, field, message, ...(handle ? { handle } : {}) });

  if (handle === "") problem(first.line, "handle", "empty: every row needs its product's handle");
  // Product columns belong on the product's first row; later rows leave them empty or repeat.
  for (const row of group.slice(1)) {
    for (const column of PRODUCT_COLUMNS) {
      const value = cell(row, column);
      if (column !== "handle" && value !== "" && value !== cell(first, column)) {
        problem(
          row.line,
          column,
          `"${value}" differs from the product's first row (line ${first.line}): product columns go on the first row only`,
        );
      }
    }
  }
  const text = (column: string) => cell(first, column) || undefined;
  const status = text("status")?.toLowerCase();
  if (status !== undefined && !["active", "archived", "draft"].includes(status)) {
    problem(first.line, "status", `must be active, archived or draft (got "${status}")`);
  }
  const tags = text("tags")
    ?.split(",")
    .map((t) => t.trim())
    .filter((t) => t !== "");

  // Option names come from the first row; later rows may leave them empty or repeat them.
  const names = [1, 2, 3].map((n) => cell(first, `option${n}_name`));
  const skus: FileProduct["skus"] = [];
  const variants = group.map((row) => {
    const options: { name: string; value: string }[] = [];
    for (const n of [1, 2, 3]) {
      const name = cell(row, `option${n}_name`) || (names[n - 1] ?? "");
      const value = cell(row, `option${n}_value`);
      const ownName = cell(row, `option${n}_name`);
      if (ownName !== "" && ownName !== names[n - 1]) {
        problem(
          row.line,
          `option${n}_name`,
          `"${ownName}" differs from the first row's "${names[n - 1] ?? ""}": every variant of a product uses the same option names`,
        );
      }
      if (name === "" && value !== "") {
        problem(row.line, `option${n}_value`, `"${value}" has no option${n}_name`);
      } else if (name !== "" && value === "") {
        problem(
          row.line,
          `option${n}_value`,
          `empty: every variant needs a value for option "${name}"`,
        );
      } else if (name !== "") options.push({ name, value });
    }
    const variant: Record<string, unknown> = { options };
    for (const [column, key] of [
      ["sku", "sku"],
      ["barcode", "barcode"],
      ["variant_image_url", "imageUrl"],
    ] as const) {
      const value = cell(row, column);
      if (value !== "") variant[key] = value;
    }
    const sku = cell(row, "sku");
    if (sku !== "") skus.push({ sku, line: row.line });
    const grams = cell(row, "grams");
    if (grams !== "") {
      if (/^\d+$/.test(grams)) variant.grams = Number(grams);
      else problem(row.line, "grams", `must be a whole number of grams (got "${grams}")`);
    }
    for (const [column, key] of [
      ["price", "price"],
      ["compare_at_price", "compareAtPrice"],
      ["unit_cost", "unitCost"],
    ] as const) {
      const value = cell(row, column);
      if (value === "") continue;
      const why = priceProblem(value);
      if (why) problem(row.line, column, why);
      else variant[key] = value;
    }
    return variant;
  });

  const candidate = {
    handle,
    ...(text("title") ? { title: text("title") } : {}),
    ...(text("vendor") ? { vendor: text("vendor") } : {}),
    ...(text("product_type") ? { productType: text("product_type") } : {}),
    ...(tags && tags.length > 0 ? { tags } : {}),
    ...(status && problems.every((p) => p.field !== "status") ? { status } : {}),
    ...(text("image_url") ? { imageUrl: text("image_url") } : {}),
    variants,
  };
  const checked = ProductCreate.safeParse(candidate);
  if (!checked.success) {
    for (const issue of checked.error.issues) {
      const [top, index, key] = issue.path;
      if (top === "handle" && handle === "") continue;
      // A row whose option columns were already explained needs no second, vaguer message.
      const ownLine = top === "variants" && typeof index === "number" ? group[index]?.line : null;
      if (
        key === "options" &&
        problems.some((p) => p.line === ownLine && p.field.startsWith("option"))
      ) {
        continue;
      }
      if (top === "variants" && typeof index === "number") {
        const row = group[index] ?? first;
        const field =
          key === "options" && issue.message.includes("option or a sku")
            ? "sku"
            : (VARIANT_CSV_FIELD[String(key)] ?? String(key ?? "options"));
        problem(row.line, field, issueMessage(issue));
      } else {
        problem(first.line, CSV_FIELD[String(top)] ?? String(top), issueMessage(issue));
      }
    }
  }
  problems.sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
  return {
    position,
    line: first.line,
    handle,
    body: problems.length === 0 && checked.success ? checked.data : null,
    problems,
    skus,
  };
}

function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code === "invalid_format" && issue.format === "url") {
    return "must be a public http or https URL";
  }
  return issue.message;
}

// ---------------------------------------------------------------------------------------------
// JSON: an array of write bodies (the provider's POST /products body, section 4.1).

function parseJson(text: string): { products: FileProduct[]; fileProblems: FileProblem[] } {
  let items: unknown;
  try {
    items = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (error) {
    return {
      products: [],
      fileProblems: [
        { line: null, field: "", message: `the JSON does not parse: ${(error as Error).message}` },
      ],
    };
  }
  if (!Array.isArray(items)) {
    return {
      products: [],
      fileProblems: [
        { line: 1, field: "", message: "the JSON must be an array of products (write bodies)" },
      ],
    };
  }
  if (items.length === 0) {
    return {
      products: [],
      fileProblems: [{ line: null, field: "", message: "the file has no products" }],
    };
  }
  const lines = topLevelLines(text);
  return {
    products: items.map((item, position) => jsonProduct(item, position, lines[position] ?? 1)),
    fileProblems: [],
  };
}

const PRICE_KEYS = ["price", "compareAtPrice", "unitCost"] as const;

function jsonProduct(item: unknown, position: number, line: number): FileProduct {
  const record = (item && typeof item === "object" ? item : {}) as Record<string, unknown>;
  const handle = typeof record.handle === "string" ? record.handle : "";
  const problems: FileProblem[] = [];
  const problem = (field: string, message: string) =>
    problems.push({ line, field, message, ...(handle ? { handle } : {}) });
  if (!item || typeof item !== "object" || Array.isArray(item)) {
    problem("", "each item must be an object (a product write body)");
    return { position, line, handle, body: null, problems, skus: [] };
  }
  // The specific price messages first; zod's generic one is then left out for those fields.
  const priced = new Set<string>();
  const variants = Array.isArray(record.variants) ? record.variants : [];
  variants.forEach((variant, i) => {
    const v = (variant ?? {}) as Record<string, unknown>;
    for (const key of PRICE_KEYS) {
      const value = v[key];
      if (value === undefined) continue;
      const path = `variants[${i}].${key}`;
      if (typeof value === "number") {
        problem(path, `must be a string such as "${value.toFixed(2)}", not a number`);
        priced.add(path);
      } else if (typeof value === "string") {
        const why = priceProblem(value);
        if (why) {
          problem(path, why);
          priced.add(path);
        }
      }
    }
  });
  const checked = ProductCreate.safeParse(item);
  if (!checked.success) {
    for (const issue of checked.error.issues) {
      const path = jsonPath(issue.path);
      if (!priced.has(path)) problem(path, issueMessage(issue));
    }
  }
  const skus = variants.flatMap((v) => {
    const sku = (v as { sku?: unknown } | null)?.sku;
    return typeof sku === "string" && sku !== "" ? [{ sku, line }] : [];
  });
  return {
    position,
    line,
    handle,
    body: problems.length === 0 && checked.success ? checked.data : null,
    problems,
    skus,
  };
}

function jsonPath(path: PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === "number" ? `[${p}]` : `${i === 0 ? "" : "."}${String(p)}`))
    .join("");
}

/**
 * The line each element of the top-level array starts on: JSON.parse keeps no positions. Walks
 * the text once, skipping strings, and notes where each depth-1 value begins.
 */
function topLevelLines(text: string): number[] {
  const lines: number[] = [];
  let line = 1;
  let depth = 0;
  let inString = false;
  let expectValue = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === "\n") line++;
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === " " || ch === "\t" || ch === "\r" || ch === "\n" || ch === "\uFEFF") continue;
    if (depth === 1 && expectValue && ch !== "]") {
      lines.push(line);
      expectValue = false;
    }
    if (ch === '"') inString = true;
    else if (ch === "[" || ch === "{") {
      depth++;
      if (depth === 1) expectValue = true;
    } else if (ch === "]" || ch === "}") depth--;
    else if (ch === "," && depth === 1) expectValue = true;
  }
  return lines;
}
