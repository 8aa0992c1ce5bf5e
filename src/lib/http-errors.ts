import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/** One error body for every route: `{ error: { code, message, fields? } }`. */
export interface ErrorBody {
  error: { code: string; message: string; fields?: { path: string; message: string }[] };
}

export function errorResponse(
  c: Context,
  status: ContentfulStatusCode,
  code: string,
  message: string,
  fields?: { path: string; message: string }[],
) {
  const body: ErrorBody = { error: { code, message, ...(fields ? { fields } : {}) } };
  return c.json(body, status);
}
