import { describe, expect, it } from "vitest";
import { formatTable, printable } from "../../src/cli/table.ts";

/**
 * What the CLI prints of text it did not write (a dead letter's message quoting a webhook body,
 * the provider's answer): a line break must not split a table's row, and an escape sequence must
 * not reach the operator's terminal, where it could recolour or rewrite what is on the screen.
 */
describe("printable", () => {
  it("shows control characters escaped and leaves everything else as it is", () => {
    expect(printable("a\nb\r\tc")).toBe("a\\nb\\r\\tc");
    expect(printable("\u001b[2J\u001b]0;title\u0007")).toBe("\\u001b[2J\\u001b]0;title\\u0007");
    expect(printable("\u007f\u009b\u0000")).toBe("\\u007f\\u009b\\u0000");
    expect(printable("#1001 · café “naïve” ✓ 東京")).toBe("#1001 · café “naïve” ✓ 東京");
  });
});

describe("formatTable", () => {
  it("keeps each row on one line and prints no escape sequence, piped or cut to a width", () => {
    const rows = [
      { id: "a|1", message: "Unexpected token '#', \"# not an order\n\" is not valid JSON" },
      { id: "b|2", message: "\u001b[31mred\u001b[0m and\r\noverwritten" },
    ];
    for (const width of [undefined, 60]) {
      const lines = formatTable(rows, { width }).split("\n");
      expect(lines).toHaveLength(3);
      expect(lines[1]).toMatch(/^ a\|1 /);
      expect(lines[2]).toMatch(/^ b\|2 /);
      for (const line of lines) expect(line).not.toMatch(/\p{Cc}/u);
    }
    expect(formatTable(rows, { width: undefined })).toContain(
      '"# not an order\\n" is not valid JSON',
    );
  });
});
