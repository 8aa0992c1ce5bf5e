import { DrizzleQueryError } from "drizzle-orm";

/**
 * A connection URL without its credentials, for a log line or an error: it names the server
 * (scheme, host, port, database). Not the password, and not the user either: a `user@host`
 * reads as an email address to the scanners that keep customer data out of logs.
 */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = "";
    parsed.password = "";
    return parsed.toString();
  } catch {
    return "(not a URL)";
  }
}

/**
 * An error in words, for a log line or a message. A database query that failed is drizzle's
 * `Failed query: <SQL>\nparams: <every value>`: its values may be customer data (a provider
 * event's body) or sealed secrets, and its SQL names no cause. It is said by its cause instead,
 * the database's or the socket's own words (`cannot execute INSERT in a read-only transaction`,
 * `connect ECONNREFUSED 127.0.0.1:5432`).
 */
export function errorText(error: unknown): string {
  if (error instanceof DrizzleQueryError && error.cause !== undefined) {
    return errorText(error.cause);
  }
  return withoutQueryValues(error instanceof Error ? error.message : String(error));
}

const QUERY_VALUES = "\nparams: ";

/** A text without the values of a failed query it quotes (see `errorText`); others as they are. */
export function withoutQueryValues(text: string): string {
  const values = text.indexOf(QUERY_VALUES);
  if (values < 0 || !text.includes("Failed query: ")) return text;
  return `${text.slice(0, values)} (its values left out)`;
}
