import { createHash } from "node:crypto";

/**
 * JSON with object keys sorted at every level, so equal values always hash alike. Built with
 * plain loops and string appends: it runs for every plan and every adopted answer, and the
 * entries/sort/map/join version was the largest cost of planning (bench:worker profile).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      out += canonicalJson(value[i]);
    }
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  // Default sort compares UTF-16 code units, as `a < b` does.
  const keys = Object.keys(record).sort();
  let out = "{";
  let first = true;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const v = record[key];
    if (v === undefined) continue;
    if (!first) out += ",";
    first = false;
    out += `${quoted(key)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

/**
 * Keys quoted as JSON, remembered: the same few dozen field names are quoted for every hash and
 * every adopted answer (a quarter of canonicalJson's time). Bounded, since an answer's loose
 * objects may carry any key.
 */
const QUOTED = new Map<string, string>();
const QUOTED_MAX = 4096;
function quoted(key: string): string {
  let text = QUOTED.get(key);
  if (text === undefined) {
    text = JSON.stringify(key);
    if (QUOTED.size < QUOTED_MAX) QUOTED.set(key, text);
  }
  return text;
}

export function canonicalHash(value: unknown): string {
  return createHash("sha256").update(canonicalJson(value)).digest("hex");
}
