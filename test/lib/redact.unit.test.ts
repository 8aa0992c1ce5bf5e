import { DrizzleQueryError } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/lib/logger.ts";
import { errorText, redactedUrl } from "../../src/lib/redact.ts";
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

describe("a failed query in a log line", () => {
  // drizzle's error for a query that failed quotes every value it sent: a provider event's
  // body (customer data), a sealed secret.
  const failed = () =>
    new DrizzleQueryError(
      'insert into "provider_events" ("payload") values ($1)',
      ['{"customerEmail":"private.person@example.com"}'],
      new Error("cannot execute INSERT in a read-only transaction"),
    );

  it("is said by the database's own words, never the query's values", () => {
    expect(errorText(failed())).toBe("cannot execute INSERT in a read-only transaction");
    expect(errorText(new Error("plain"))).toBe("plain");
    expect(errorText("text")).toBe("text");
  });

  it("loses its values in every line, wherever its message was put", () => {
    const lines: string[] = [];
    const logger = createLogger("info", {
      write: (line: string) => {
        lines.push(line);
      },
    });
    const { message } = failed();
    logger.warn({ err: { message }, nested: [{ detail: message }] }, `store failed: ${message}`);
    const [line] = lines;
    expect(line).not.toContain("private.person@example.com");
    expect(line).toContain(
      'Failed query: insert into \\"provider_events\\" (\\"payload\\") values ($1) (its values left out)',
    );
  });
});

describe("an error's class in a log line", () => {
  const logged = (object: Record<string, unknown>) => {
    const lines: string[] = [];
    createLogger("info", { write: (line: string) => void lines.push(line) }).error(object, "x");
    return JSON.parse(lines[0] ?? "{}") as Record<string, unknown>;
  };

  it("is shown, so an operator reads which kind of failure it was", () => {
    const timeout = new Error("no answer");
    timeout.name = "TimeoutError";
    expect(logged({ err: { name: "DeadlineError", message: "late" } }).err).toMatchObject({
      name: "DeadlineError",
      message: "late",
    });
    expect(logged({ err: { name: "HTTPException", message: "bad" } }).err).toMatchObject({
      name: "HTTPException",
    });
    expect(logged({ err: timeout }).err).toMatchObject({ name: "TimeoutError" });
    expect(logged({ failure: timeout }).failure).toMatchObject({ name: "TimeoutError" });
  });

  it("is the only name kept: a person's or a product's stays censored, under err too", () => {
    expect(logged({ err: { name: "Jane Doe", message: "x" } }).err).toMatchObject({
      name: "[redacted]",
    });
    expect(logged({ err: { name: "Jane", message: "x" } }).err).toMatchObject({
      name: "[redacted]",
    });
    expect(logged({ customer: { name: "ValidationError" } }).customer).toBe("[redacted]");
    expect(logged({ line: { name: "AnError" } }).line).toEqual({ name: "[redacted]" });
    expect(logged({ err: { detail: { name: "ParseError" } } }).err).toEqual({
      detail: { name: "[redacted]" },
    });
  });
});
