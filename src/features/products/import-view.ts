import type { FileProblem } from "./product-file.ts";
import type { ImportRecord, ImportRow } from "./repository.ts";

/** At most this many bad rows are listed (the counts cover the rest). */
const MAX_PROBLEMS = 200;

/** An import as a page shows it: counts by outcome over every run, and the bad rows. */
export function importView(record: ImportRecord, rows: ImportRow[]) {
  const counts = {
    created: 0,
    updated: 0,
    unchanged: 0,
    invalid: 0,
    refused: 0,
    failed: 0,
    waiting: 0,
  };
  const problems: FileProblem[] = [];
  for (const row of rows) {
    if (row.outcome === "pending" || row.outcome === "sent") counts.waiting++;
    else counts[row.outcome]++;
    if (row.outcome === "invalid" || row.outcome === "refused" || row.outcome === "failed") {
      problems.push(...row.problems);
    }
  }
  return {
    id: record.id,
    fileName: record.fileName,
    status: record.status === "pending" ? ("running" as const) : record.status,
    error: record.error,
    createdAt: record.createdAt,
    finishedAt: record.finishedAt,
    total: rows.length,
    counts,
    problems: problems
      .slice(0, MAX_PROBLEMS)
      .map(({ line, field, message }) => ({ line, field, message })),
  };
}
