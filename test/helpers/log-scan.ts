/**
 * Scans captured logs for customer data and secrets. `needles` are the exact values the test
 * data used (secrets, tokens, emails, phones); the patterns catch any email, any phone number
 * written the way the fixtures write them, and any JWT (the provider's bearer tokens).
 */
export interface LogLeak {
  source: string;
  kind: string;
  excerpt: string;
}

const PATTERNS: { kind: string; pattern: RegExp }[] = [
  { kind: "email", pattern: /[\w.+-]+@[\w-]+\.[\w.-]+/g },
  { kind: "phone", pattern: /\(?\+?\d{1,3}\)?[ .-]?\(?\d{3}\)?[ .-]\d{3}[ .-]\d{4}/g },
  { kind: "jwt", pattern: /eyJ[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}/g },
  { kind: "bearer", pattern: /Bearer\s+[\w.-]{16,}/gi },
];

export function scanLogs(
  logs: { source: string; text: string }[],
  needles: { kind: string; value: string }[],
): LogLeak[] {
  const leaks: LogLeak[] = [];
  for (const { source, text } of logs) {
    for (const { kind, value } of needles) {
      if (value.length < 4) continue;
      let at = text.indexOf(value);
      while (at !== -1) {
        leaks.push({
          source,
          kind,
          excerpt: text.slice(Math.max(0, at - 60), at + value.length + 20),
        });
        at = text.indexOf(value, at + value.length);
      }
    }
    for (const { kind, pattern } of PATTERNS) {
      for (const match of text.matchAll(pattern)) {
        const at = match.index ?? 0;
        leaks.push({
          source,
          kind,
          excerpt: text.slice(Math.max(0, at - 60), at + match[0].length + 20),
        });
      }
    }
  }
  return leaks;
}
