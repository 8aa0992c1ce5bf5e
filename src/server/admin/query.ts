import type { Context } from "hono";
import { z } from "zod";
import { parseWholeNumber, wholeNumberRule } from "../../lib/whole-number.ts";

/**
 * The request's query parameters, one value each, or the fields of those given more than once
 * (`?shop=a…&shop=b…`, `?limit=5&limit=500`): Hono's `c.req.query()` keeps the first value and
 * drops the others silently, so a list would answer for a shop or a page the operator may not
 * have meant. As the CLI refuses an option given twice with two values.
 */
export function singleQuery(
  c: Context,
): { ok: true; query: Record<string, string> } | { ok: false; fields: Field[] } {
  const all = c.req.queries();
  const fields = Object.entries(all)
    .filter(([, values]) => values.length > 1)
    .map(([path]) => ({ path, message: "given more than once: give it once" }));
  if (fields.length > 0) return { ok: false, fields };
  return { ok: true, query: c.req.query() };
}

type Field = { path: string; message: string };

/**
 * A whole number in a query (`limit`, `offset`): digits only, within bounds, in the CLI's words
 * (lib/whole-number.ts). `z.coerce.number()` took an empty `offset=` as 0, `1e2` as 100 and
 * `0x10` as 16.
 */
export function queryWholeNumber(min: number, max?: number) {
  const bounds = max === undefined ? { min } : { min, max };
  const message = wholeNumberRule(bounds);
  return z.string().transform((text, ctx) => {
    const n = parseWholeNumber(text, bounds);
    if (n !== null) return n;
    ctx.addIssue({ code: "custom", message, input: text });
    return z.NEVER;
  });
}
