import { hash } from "node:crypto";

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

/**
 * Whether two values have the same canonical JSON, found without building it: the adopted
 * answer of every created order is compared field by field with what was sent, and serialising
 * both sides of its nested objects (the customer, the addresses) was most of that comparison's
 * cost (bench:worker profile). Primitives, and a primitive against an object, are compared by
 * their JSON, as canonicalJson would.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") {
    return canonicalJson(a) === canonicalJson(b);
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  let defined = 0;
  for (const key of Object.keys(left)) {
    const value = left[key];
    if (value === undefined) continue;
    defined += 1;
    // A property undefined on the right is left out of its JSON, as one it lacks.
    const other = Object.hasOwn(right, key) ? right[key] : undefined;
    if (other === undefined || !sameJson(value, other)) return false;
  }
  let other = 0;
  for (const key of Object.keys(right)) if (right[key] !== undefined) other += 1;
  return defined === other;
}

/**
 * SHA-256 of the canonical JSON, in hex. One-shot `hash`: a Hash object per call cost twice as
 * much, and every plan hashes the order and each of its lines.
 */
export function canonicalHash(value: unknown): string {
  return hash("sha256", canonicalJson(value));
}
