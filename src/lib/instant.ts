/**
 * A date an operator types (`--since`, `--until`, an admin API's `since`): a calendar date
 * (2026-01-31, from midnight UTC) or an RFC 3339 date-time with an offset
 * (2026-01-31T09:00:00Z, 2026-01-31 09:00+02:00). Epoch ms, or null for anything else:
 * `Date.parse` alone took "1" for 2001-01-01, "Oct 1" for 2001-10-01, 2026-02-30 for March 2nd
 * and a date-time without an offset in the machine's time zone.
 */
export function parseInstantText(value: string): number | null {
  const text = value.trim();
  const match =
    /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/i.exec(
      text,
    );
  if (!match) return null;
  const [, year, month, day, hour, minute, second] = match;
  // The calendar date as written must exist (no February 30th), and so must the time.
  const date = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  if (date.toISOString().slice(0, 10) !== text.slice(0, 10)) return null;
  if (hour === undefined) return date.getTime();
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second ?? 0) > 59) return null;
  const ms = Date.parse(text.replace(" ", "T"));
  return Number.isNaN(ms) ? null : ms;
}

/** What an operator is told when a date is not one: the forms that are. */
export const INSTANT_FORMS =
  "a date such as 2026-01-31 (from midnight UTC) or a date-time with an offset such as 2026-01-31T09:00:00Z";
