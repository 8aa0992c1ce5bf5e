import { GraphQLError } from "graphql";
import type { RestOrder } from "../state.ts";

/**
 * The subset of Shopify's search syntax the connector uses on `orders(query:)`:
 * `updated_at:>'2026-01-01T00:00:00Z'`, `created_at:<=…`, `name:#1001` (or `name:1001`),
 * `id:123`, terms joined by spaces or AND. Any other field is refused, so a typo in a
 * connector query fails a test instead of silently matching everything.
 */
type Predicate = (order: RestOrder) => boolean;

const TERM = /(\w+):(<=|>=|<|>)?('[^']*'|"[^"]*"|[^\s]+)/g;

export function parseOrderSearch(query: string | null | undefined): Predicate {
  if (!query?.trim()) return () => true;
  const predicates: Predicate[] = [];
  const rest = query.replace(TERM, (_all, field: string, op: string | undefined, raw: string) => {
    const value = raw.replace(/^['"]|['"]$/g, "");
    predicates.push(term(field, op ?? "", value));
    return "";
  });
  if (rest.replace(/\bAND\b/g, "").trim() !== "") {
    throw new GraphQLError(`stand-in: unsupported search syntax in "${query}"`);
  }
  return (order) => predicates.every((p) => p(order));
}

function term(field: string, op: string, value: string): Predicate {
  switch (field) {
    case "updated_at":
    case "created_at":
    case "processed_at": {
      const at = Date.parse(value);
      if (Number.isNaN(at)) throw new GraphQLError(`stand-in: ${field} needs a date, got ${value}`);
      return (o) => compare(Date.parse(String(o[field] ?? o.created_at)), op, at);
    }
    case "name": {
      const wanted = value.replace(/^#/, "");
      return (o) => String(o.name ?? "").replace(/^#/, "") === wanted;
    }
    case "id":
      return (o) => String(o.id) === value.replace(/^gid:\/\/shopify\/Order\//, "");
    default:
      throw new GraphQLError(`stand-in: unsupported search field ${field}`);
  }
}

function compare(a: number, op: string, b: number): boolean {
  switch (op) {
    case ">":
      return a > b;
    case ">=":
      return a >= b;
    case "<":
      return a < b;
    case "<=":
      return a <= b;
    default:
      return a === b;
  }
}
