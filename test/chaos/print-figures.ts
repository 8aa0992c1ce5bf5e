/**
 * Prints the figures of the last `npm run test:chaos` (kept in `.chaos-results/`) as the
 * Markdown table of RELIABILITY.md: `npx tsx test/chaos/print-figures.ts`.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ScenarioFigures } from "./harness/figures.ts";
import { REPO_ROOT } from "./harness/processes.ts";

const dir = process.env.CHAOS_RESULTS_DIR ?? join(REPO_ROOT, ".chaos-results");
const rows = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as ScenarioFigures)
  .sort((a, b) => a.scenario.localeCompare(b.scenario));

const ratio = (a: number, b: number) => `${(a / Math.max(1, b)).toFixed(2)}×`;
console.log(
  "| scenario | orders | events sent | HTTP attempts | answered 200 | lost | duplicated | wrong | dead-lettered | provider calls / minimum | of which faulted | 429s | duration |",
);
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
for (const f of rows) {
  console.log(
    `| ${f.scenario} | ${f.orders} | ${f.events} | ${f.attempts} | ${f.answered200} | ${f.lost} | ${f.duplicated} | ${f.wrong} | ${f.deadLettered} | ${f.providerCalls} / ${f.providerMinimum} (${ratio(f.providerCalls, f.providerMinimum)}) | ${f.faultedCalls} | ${f.provider429} | ${(f.durationMs / 1000).toFixed(0)} s |`,
  );
}
for (const f of rows.filter((r) => r.notes.length > 0)) {
  console.log(`\n- ${f.scenario}: ${f.notes.join("; ")}`);
}
