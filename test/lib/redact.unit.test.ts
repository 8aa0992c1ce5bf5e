import { describe, expect, it } from "vitest";
import { redactedUrl } from "../../src/lib/redact.ts";
import { scanLogs } from "../helpers/log-scan.ts";

describe("redactedUrl", () => {
  it("names the server without the user or the password", () => {
    expect(redactedUrl("postgres://app:s3cret@db.internal:5432/connector")).toBe(
      "postgres://db.internal:5432/connector",
    );
    expect(redactedUrl("rediss://default:s%40cret@redis.internal:6380")).toBe(
      "rediss://redis.internal:6380",
    );
    expect(redactedUrl("redis://127.0.0.1:6379")).toBe("redis://127.0.0.1:6379");
    expect(redactedUrl("not a url")).toBe("(not a URL)");
  });

  it("gives a line the log scanners find nothing in", () => {
    // A user@host reads as an email address: the chaos suite's scan flagged each process's
    // "DATABASE_URL postgres://connector@127.0.0.1:… is unreachable" line.
    const line = `DATABASE_URL ${redactedUrl("postgres://connector@127.0.0.1:5432/postgres")} is unreachable`;
    expect(scanLogs([{ source: "worker", text: line }], [])).toEqual([]);
  });
});
