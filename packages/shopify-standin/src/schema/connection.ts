import { GraphQLError } from "graphql";

/** Shopify refuses pages above 250 objects and paginates no further than 25,000 objects. */
export const MAX_PAGE_SIZE = 250;
export const PAGINATION_LIMIT = 25_000;

export interface Connection<T> {
  nodes: T[];
  edges: { cursor: string; node: T }[];
  pageInfo: {
    hasNextPage: boolean;
    hasPreviousPage: boolean;
    startCursor: string | null;
    endCursor: string | null;
  };
}

/** The sort position of an item: its sort value, then its id (ties). */
export type SortKey = [value: number, id: number];

interface Cursor {
  last_value: number;
  last_id: number;
  /** Objects paginated so far, for the 25,000 cap. */
  n: number;
}

const badRequest = (message: string) =>
  new GraphQLError(message, { extensions: { code: "BAD_REQUEST" } });

const encode = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString("base64url");

function decode(cursor: string): Cursor {
  try {
    const c = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as Partial<Cursor>;
    if (
      typeof c.last_value === "number" &&
      typeof c.last_id === "number" &&
      typeof c.n === "number"
    )
      return c as Cursor;
  } catch {}
  throw badRequest("Invalid cursor for current pagination sort.");
}

const after = (a: SortKey, b: SortKey, reverse: boolean) => {
  const d = a[0] !== b[0] ? a[0] - b[0] : a[1] - b[1];
  return reverse ? d < 0 : d > 0;
};

/**
 * Forward keyset paging, like Shopify's cursors (the last sort value and id): an object updated
 * while a client pages moves behind the cursor instead of shifting every later page.
 */
export function connectionOf<T>(
  items: T[],
  keyOf: (item: T) => SortKey,
  args: { first?: unknown; after?: unknown; reverse?: unknown },
): Connection<T> {
  if (args.first === undefined || args.first === null)
    throw badRequest("you must provide one of first or last");
  const first = Number(args.first);
  if (!Number.isInteger(first) || first > MAX_PAGE_SIZE || first < 0)
    throw badRequest(`The 'first' argument must be between 0 and ${MAX_PAGE_SIZE}.`);
  const reverse = args.reverse === true;
  const sorted = items
    .map((item) => ({ item, key: keyOf(item) }))
    .sort((a, b) => (after(a.key, b.key, reverse) ? 1 : -1));
  const cursor = typeof args.after === "string" ? decode(args.after) : null;
  const rest = cursor
    ? sorted.filter((e) => after(e.key, [cursor.last_value, cursor.last_id], reverse))
    : sorted;
  const seen = cursor?.n ?? 0;
  const room = Math.max(0, PAGINATION_LIMIT - seen);
  const page = rest.slice(0, Math.min(first, room));
  const edges = page.map((e, i) => ({
    cursor: encode({ last_value: e.key[0], last_id: e.key[1], n: seen + i + 1 }),
    node: e.item,
  }));
  return {
    nodes: edges.map((e) => e.node),
    edges,
    pageInfo: {
      hasNextPage: rest.length > page.length && seen + page.length < PAGINATION_LIMIT,
      hasPreviousPage: seen > 0,
      startCursor: edges[0]?.cursor ?? null,
      endCursor: edges.at(-1)?.cursor ?? null,
    },
  };
}
