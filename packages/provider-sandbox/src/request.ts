import type { HttpBindings } from "@hono/node-server";
import type { Context } from "hono";
import { SandboxHttpError } from "./http-error.ts";
import { decodeCursor } from "./paginate.ts";
import type { TokenClaims } from "./tokens.ts";

/** What every request of the sandbox's API carries once its token is checked. */
export type Env = {
  Bindings: HttpBindings;
  Variables: { claims: TokenClaims; arrivedAt: number; requestId: string; storeId?: number };
};

export async function readJson(c: Context, optional = false): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === "") {
    if (optional) return undefined;
    throw new SandboxHttpError(400, "validation_error", "a JSON body is required", [
      { path: "", message: "required" },
    ]);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new SandboxHttpError(400, "validation_error", "the body is not valid JSON", [
      { path: "", message: "invalid JSON" },
    ]);
  }
}

export function pageParams(query: Record<string, string>) {
  for (const name of ["after", "before"] as const) {
    const cursor = query[name];
    if (cursor !== undefined && decodeCursor(cursor) === null) {
      throw new SandboxHttpError(400, "validation_error", `${name} is not a valid cursor`, [
        { path: name, message: "invalid cursor" },
      ]);
    }
  }
  const int = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  return {
    ...pick(query, ["after", "before", "orderBy"]),
    ...(query.first !== undefined ? { first: int(query.first) } : {}),
    ...(query.last !== undefined ? { last: int(query.last) } : {}),
  };
}

export function pick(query: Record<string, string>, names: string[]) {
  return Object.fromEntries(names.filter((n) => query[n] !== undefined).map((n) => [n, query[n]]));
}
