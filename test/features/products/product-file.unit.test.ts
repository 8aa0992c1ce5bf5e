import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { priceProblem } from "../../../src/features/products/price.ts";
import { parseProductFile } from "../../../src/features/products/product-file.ts";

const HEADER =
  "handle,title,vendor,product_type,tags,status,image_url,option1_name,option1_value,option2_name,option2_value,option3_name,option3_value,sku,barcode,grams,price,compare_at_price,unit_cost,variant_image_url";

/** A CSV row from the columns it sets (the rest empty). */
function row(cells: Record<string, string>): string {
  return HEADER.split(",")
    .map((column) => {
      const value = cells[column] ?? "";
      return /[",\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
    })
    .join(",");
}
const csv = (...rows: Record<string, string>[]) => [HEADER, ...rows.map(row)].join("\n");
const problemsOf = (text: string, format: "csv" | "json" = "csv") => {
  const file = parseProductFile(text, format);
  return [...file.fileProblems, ...file.products.flatMap((p) => p.problems)];
};

describe("product CSV", () => {
  it("reads the example file: rows sharing a handle are one product, in the order sent", () => {
    const file = parseProductFile(readFileSync("examples/products.csv", "utf8"), "csv");
    expect(file.fileProblems).toEqual([]);
    expect(file.products.map((p) => [p.handle, p.line, p.problems.length])).toEqual([
      ["classic-enamel-mug", 2, 0],
      ["wholesale-tote-10-pack", 5, 0],
      ["legacy-trail-jacket", 6, 0],
    ]);
    const mug = file.products[0]?.body;
    expect(mug).toMatchObject({
      handle: "classic-enamel-mug",
      title: "Classic enamel mug",
      productType: "Mugs",
      tags: ["retired", "enamel"],
      status: "archived",
      imageUrl: "https://cdn.example.com/mug.jpg",
    });
    expect(mug?.variants).toHaveLength(3);
    // Later rows inherit the option names of the product's first row.
    expect(mug?.variants[1]).toEqual({
      options: [
        { name: "Color", value: "Blue" },
        { name: "Size", value: "16 oz" },
      ],
      sku: "MUG-BLU-16",
      grams: 410,
      price: "21.00",
      unitCost: "7.10",
    });
    expect(file.products[1]?.body?.variants).toEqual([
      { options: [], sku: "TOTE-10PK", grams: 2200, price: "95.00", unitCost: "41.50" },
    ]);
    expect(file.products[0]?.skus.map((s) => [s.sku, s.line])).toEqual([
      ["MUG-BLU-12", 2],
      ["MUG-BLU-16", 3],
      ["MUG-RED-12", 4],
    ]);
  });

  it("names the line and the column of every bad cell, with what to write instead", () => {
    const problems = problemsOf(
      csv(
        { handle: "a", option1_name: "Size", option1_value: "S", price: "$12.00" },
        { handle: "a", option1_value: "M", price: "1,299.00", grams: "12.5" },
        { handle: "a", option1_value: "L", compare_at_price: "12.345", unit_cost: "123456789" },
        { handle: "b", status: "live", sku: "B-1", image_url: "ftp://x.example.com/b.png" },
      ),
    );
    expect(problems.map((p) => [p.line, p.field, p.message])).toEqual([
      [
        2,
        "price",
        `"$12.00" has a currency symbol or other text: write a plain decimal in the store's currency; write 12.00`,
      ],
      [3, "grams", `must be a whole number of grams (got "12.5")`],
      [3, "price", `"1,299.00" has a thousands separator; write 1299.00`],
      [4, "compare_at_price", `"12.345" has more than 2 decimals`],
      [4, "unit_cost", `"123456789" is above 99999999.99`],
      [5, "status", `must be active, archived or draft (got "live")`],
      [5, "image_url", "must be a public http or https URL"],
    ]);
  });

  it("refuses a variant with neither an option nor a sku, and repeated or mismatched options", () => {
    const problems = problemsOf(
      csv(
        { handle: "a", title: "A", price: "1.00" },
        { handle: "b", option1_name: "Size", option1_value: "S" },
        { handle: "b", option1_value: "S" },
        { handle: "b", option1_name: "Colour", option1_value: "Red" },
        { handle: "c", option1_value: "Blue", sku: "C" },
        { handle: "d", option1_name: "Size", sku: "D" },
      ),
    );
    expect(problems.map((p) => [p.line, p.field, p.message])).toEqual([
      [2, "sku", "each variant needs at least one option or a sku"],
      [4, "options", "two variants repeat the same combination of option values"],
      [
        5,
        "option1_name",
        `"Colour" differs from the first row's "Size": every variant of a product uses the same option names`,
      ],
      [6, "option1_value", `"Blue" has no option1_name`],
      [7, "option1_value", `empty: every variant needs a value for option "Size"`],
    ]);
  });

  it("keeps product columns on the first row and a product's rows together", () => {
    const problems = problemsOf(
      csv(
        { handle: "a", title: "A", option1_name: "Size", option1_value: "S" },
        { handle: "a", title: "Another title", option1_value: "M" },
        { handle: "b", sku: "B-1" },
        { handle: "a", sku: "A-3" },
        { handle: "", sku: "X" },
      ),
    );
    expect(problems.map((p) => [p.line, p.field, p.message])).toEqual([
      [
        3,
        "title",
        `"Another title" differs from the product's first row (line 2): product columns go on the first row only`,
      ],
      [
        5,
        "handle",
        `"a" is used again after other products (first at line 2): keep a product's rows together`,
      ],
      [6, "handle", "empty: every row needs its product's handle"],
    ]);
  });

  it("counts lines as the file has them: quoted line breaks, blank lines, a BOM", () => {
    const text = `\uFEFF${HEADER}\n\n${row({ handle: "a", title: "Line one\nline two", sku: "A" })}\n${row({ handle: "b", sku: "B", price: "x" })}\n`;
    const file = parseProductFile(text, "csv");
    expect(file.products.map((p) => [p.handle, p.line])).toEqual([
      ["a", 3],
      ["b", 5],
    ]);
    expect(file.products[1]?.problems[0]?.line).toBe(5);
  });

  it("refuses the whole file for an unknown column, a missing handle column or broken quoting", () => {
    expect(problemsOf("handle,colour\na,red").map((p) => [p.line, p.field])).toEqual([
      [1, "colour"],
    ]);
    expect(problemsOf("title,sku\nA,A-1")[0]?.message).toBe("the header has no handle column");
    const broken = problemsOf(`${HEADER}\na,"unclosed`);
    expect(broken[0]?.message).toBe("the CSV does not parse: a quoted cell is not closed");
    expect(problemsOf(`handle,sku\na,b,c`)[0]).toMatchObject({
      line: 2,
      message: "the CSV does not parse: a row has more or fewer cells than the header",
    });
  });
});

describe("product JSON", () => {
  it("reads the example file as write bodies", () => {
    const file = parseProductFile(readFileSync("examples/products.json", "utf8"), "json");
    expect(file.fileProblems).toEqual([]);
    expect(file.products.map((p) => [p.handle, p.line, p.body !== null])).toEqual([
      ["classic-enamel-mug", 2, true],
      ["wholesale-tote-10-pack", 35, true],
    ]);
  });

  it("names each bad item's line and the path of the field", () => {
    const text = JSON.stringify(
      [
        { handle: "a", tags: ["x,y"], variants: [{ options: [], price: 12.5 }] },
        { handle: "a", variants: [{ options: [], sku: "A", price: "€3" }], colour: "red" },
        { title: "no handle", variants: [] },
      ],
      null,
      2,
    );
    const problems = problemsOf(text, "json");
    expect(problems.map((p) => [p.line, p.field, p.message])).toEqual([
      [2, "variants[0].price", `must be a string such as "12.50", not a number`],
      // zod checks the variant rules once the fields are well-formed: fixing the tag shows them.
      [2, "tags[0]", "a tag must not contain a comma"],
      [
        14,
        "variants[0].price",
        `"€3" has a currency symbol or other text: write a plain decimal in the store's currency; write 3`,
      ],
      [14, "", `Unrecognized key: "colour"`],
      [14, "handle", `"a" is used by another item too (line 2): one item per handle`],
      [25, "handle", "Invalid input: expected string, received undefined"],
      [25, "variants", "a product needs at least 1 variant"],
    ]);
  });

  it("refuses JSON that is not an array of products", () => {
    expect(problemsOf('{"handle":"a"}', "json")[0]?.message).toBe(
      "the JSON must be an array of products (write bodies)",
    );
    expect(problemsOf("[{", "json")[0]?.message).toMatch(/^the JSON does not parse: /);
  });
});

describe("price strings", () => {
  it("accepts the provider's pattern and explains every other shape", () => {
    for (const ok of ["0", "19.99", "99999999.99", "5.5"]) expect(priceProblem(ok)).toBeNull();
    expect(priceProblem("-1.00")).toBe(`"-1.00" is negative: a price is 0 or more`);
    expect(priceProblem("12 000")).toBe(`"12 000" has a thousands separator; write 12000`);
    expect(priceProblem("USD 5")).toMatch(/currency symbol/);
  });
});
