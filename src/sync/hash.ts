import { createHash } from "node:crypto";

/**
 * JSON with object keys sorted at every level, so equal values always hash alike. Built with
 * plain loops and string appends: it runs for every plan and every adopted answer, and the
 * entries/sort/map/join version was the largest cost of planning (bench:worker profile).
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      out += canonicalJson(value[i]);
    }
    return `${out}]`;
  }
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    // Default sort compares UTF-16 code units, as `a < b` does.
    const keys = Object.keys(record).sort();
    let out = "{";
    let first = true;
    for (const key of keys) {
      const v = record[key];
      if (v === undefined) continue;
      if (!first) out += ",";
      first = false;
      out += `${JSON.stringify(key)}:${canonicalJson(v)}`;
    }
    return `${out}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export function canonicalHash(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}
