/**
 * `npx tsx bench/json-parse.ts` — CPU µs per parse of the bench's ~4 KB order webhook body, with
 * and without an integer beyond 2^53, for the receiver's parser (`parseShopifyJson`: native
 * `JSON.parse` unless an integer of 16+ digits appears, lossless-json then) against the
 * alternative of a `JSON.parse` reviver reading Node 24's `context.source` on every body.
 * Process CPU time (not wall time), best of five rounds, so another process on the machine
 * matters less.
 */
import { readFileSync } from "node:fs";
import { parseShopifyJson } from "../src/shopify/json.ts";

const base = JSON.parse(
  readFileSync(new URL("../examples/orders-create.json", import.meta.url), "utf8"),
);
base.line_items = base.line_items.slice(0, 1);
const common = JSON.stringify(base);
const long = common.replace('"id":5906323456123', '"id":12345678901234567890');

/** Keeps an integer that a double cannot hold as its decimal text. */
function sourceReviver(_key: string, value: unknown, context?: { source?: string }) {
  return typeof value === "number" &&
    !Number.isSafeInteger(value) &&
    context?.source !== undefined &&
    /^-?\d+$/.test(context.source)
    ? context.source
    : value;
}
const parsers: Record<string, (raw: string) => unknown> = {
  "JSON.parse (loses 64-bit ids)": (raw) => JSON.parse(raw),
  "parseShopifyJson (the receiver's)": parseShopifyJson,
  "JSON.parse + context.source reviver": (raw) =>
    JSON.parse(raw, sourceReviver as (key: string, value: unknown) => unknown),
};

const ROUNDS = 5;
const PARSES = 20_000;
console.log(
  `| parser | ${Buffer.byteLength(common)} B body, ids < 2^53 | same body, one id > 2^53 |`,
);
console.log("|---|---|---|");
for (const [name, parse] of Object.entries(parsers)) {
  const cells = [common, long].map((raw) => {
    for (let i = 0; i < 2_000; i++) parse(raw);
    let best = Number.POSITIVE_INFINITY;
    for (let round = 0; round < ROUNDS; round++) {
      const start = process.cpuUsage();
      for (let i = 0; i < PARSES; i++) parse(raw);
      const used = process.cpuUsage(start);
      best = Math.min(best, (used.user + used.system) / PARSES);
    }
    return `${best.toFixed(1)} µs`;
  });
  console.log(`| ${name} | ${cells.join(" | ")} |`);
}
const kept = parseShopifyJson(long) as { id: unknown };
console.log(`\nparseShopifyJson keeps the long id exact: ${JSON.stringify(kept.id)}`);
