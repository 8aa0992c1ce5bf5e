import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { z } from "zod";

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

/**
 * A refused request's fields, from zod's issues: each unknown key of a strict object is a field
 * of its own ("unknown field"), the others their path and message.
 */
export function fieldsOf(error: z.ZodError): { path: string; message: string }[] {
  return error.issues.flatMap((i) =>
    i.code === "unrecognized_keys"
      ? i.keys.map((key) => ({ path: [...i.path, key].join("."), message: "unknown field" }))
      : [{ path: i.path.join("."), message: i.message }],
  );
}
