import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, type PageInfo } from "./interface.ts";

export interface PageParams {
  after?: string | undefined;
  before?: string | undefined;
  first?: number | undefined;
  last?: number | undefined;
  orderBy?: "asc" | "desc" | undefined;
  /** The largest page answered (4.2: 100); a stand-in for a service that clamps lower. */
  maxPageSize?: number | undefined;
}

export const encodeCursor = (id: number) => Buffer.from(`c:${id}`).toString("base64url");
export function decodeCursor(cursor: string): number | null {
  const text = Buffer.from(cursor, "base64url").toString();
  const match = /^c:(\d+)$/.exec(text);
  return match ? Number(match[1]) : null;
}

/** Cursor paging over items sorted by a numeric id, forwards (first/after) or back (last/before). */
export function paginate<T>(
  all: T[],
  idOf: (item: T) => number,
  params: PageParams,
): { items: T[]; pageInfo: PageInfo } {
  const sorted = [...all].sort((a, b) =>
    params.orderBy === "asc" ? idOf(a) - idOf(b) : idOf(b) - idOf(a),
  );
  const indexOf = (cursor: string | undefined) => {
    if (!cursor) return -1;
    const id = decodeCursor(cursor);
    return id === null ? -2 : sorted.findIndex((item) => idOf(item) === id);
  };
  const max = params.maxPageSize ?? MAX_PAGE_SIZE;
  let start = 0;
  let end = sorted.length;
  const afterIndex = indexOf(params.after);
  const beforeIndex = indexOf(params.before);
  if (afterIndex >= 0) start = afterIndex + 1;
  if (beforeIndex >= 0) end = beforeIndex;
  const backwards =
    params.last !== undefined || (params.before !== undefined && params.first === undefined);
  let from = start;
  let to = end;
  if (backwards) {
    const size = Math.min(max, Math.max(1, params.last ?? DEFAULT_PAGE_SIZE));
    from = Math.max(start, end - size);
  } else {
    const size = Math.min(max, Math.max(1, params.first ?? DEFAULT_PAGE_SIZE));
    to = Math.min(end, start + size);
  }
  const items = sorted.slice(from, to);
  const first = items[0];
  const last = items[items.length - 1];
  return {
    items,
    pageInfo: {
      hasNextPage: to < sorted.length,
      hasPreviousPage: from > 0,
      startCursor: first === undefined ? null : encodeCursor(idOf(first)),
      endCursor: last === undefined ? null : encodeCursor(idOf(last)),
    },
  };
}
