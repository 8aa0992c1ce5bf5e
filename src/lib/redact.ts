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
