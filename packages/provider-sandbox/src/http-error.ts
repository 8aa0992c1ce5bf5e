import type { z } from "zod";

/** An answer the sandbox gives instead of a result: status, code, message, fields. */
export class SandboxHttpError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 409 | 429 | 500,
    readonly code: string,
    message: string,
    readonly fields?: { path: string; message: string }[],
    readonly extra?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** Validates a body against a contract schema; a failure names every field (400). */
export function check<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const fields = result.error.issues.map((issue) => ({
    path: issue.path.map(String).join("."),
    message: issue.message,
  }));
  throw new SandboxHttpError(
    400,
    "validation_error",
    `request body is invalid: ${fields.map((f) => `${f.path || "body"}: ${f.message}`).join("; ")}`,
    fields,
  );
}

export const notFound = (what: string) =>
  new SandboxHttpError(404, "not_found", `${what} not found`);
