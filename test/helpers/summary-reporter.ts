import type { SerializedError } from "vitest";
import type { Reporter, TestCase, TestModule, TestSuite } from "vitest/node";

/** Whether a suite, or the file, around this test failed (a hook or the file's loading). */
function enclosingFailed(test: TestCase): boolean {
  let parent: TestSuite | TestModule = test.parent;
  for (;;) {
    if (parent.state() === "failed") return true;
    if (parent.type === "module") return false;
    parent = parent.parent;
  }
}

export interface RunSummary {
  passed: number;
  failed: number;
  skipped: number;
  /** Files that failed, each with why: a failed test, a failed hook or a file that did not load. */
  failedFiles: string[];
  unhandledErrors: number;
}

/**
 * Counts a run truthfully. A test that was meant to run but did not, because a hook around it or
 * its file's loading failed, is a failed test, not a skipped one; a file that failed with no
 * failed test of its own (an error while loading it, or in an `afterAll`) counts one failure; so
 * does an error outside any test. Only tests declared `skip` or `todo` are skipped.
 */
export function summarize(
  testModules: ReadonlyArray<TestModule>,
  unhandledErrors: ReadonlyArray<SerializedError> = [],
): RunSummary {
  const summary: RunSummary = {
    passed: 0,
    failed: 0,
    skipped: 0,
    failedFiles: [],
    unhandledErrors: unhandledErrors.length,
  };
  for (const module of testModules) {
    let failedHere = 0;
    for (const test of module.children.allTests()) {
      const state = test.result().state;
      if (state === "passed") summary.passed++;
      else if (state === "failed") failedHere++;
      else if (test.options.mode === "skip" || test.options.mode === "todo") summary.skipped++;
      else if (enclosingFailed(test)) failedHere++;
      else summary.skipped++;
    }
    if (module.state() === "failed" && failedHere === 0) failedHere = 1;
    summary.failed += failedHere;
    if (module.state() === "failed") {
      const error = module.errors()[0]?.message ?? firstSuiteError(module);
      summary.failedFiles.push(
        error ? `${module.relativeModuleId} (${oneLine(error)})` : module.relativeModuleId,
      );
    }
  }
  summary.failed += summary.unhandledErrors;
  return summary;
}

function firstSuiteError(module: TestModule): string | undefined {
  for (const suite of module.children.allSuites()) {
    const message = suite.errors()[0]?.message;
    if (message) return message;
  }
  return undefined;
}

function oneLine(text: string): string {
  const line = text.split("\n")[0] ?? "";
  return line.length > 120 ? `${line.slice(0, 117)}…` : line;
}

/**
 * Prints, after vitest's own summary, the files that failed and one plain closing line,
 * `tests: N passed, N failed, N skipped`, alone on the last line, so that CI tooling that reads
 * a runner's last line understands the run. A run that exits non-zero never says `0 failed`.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
  ) {
    const summary = summarize(testModules, unhandledErrors);
    const lines = [""];
    if (summary.failedFiles.length > 0) {
      lines.push(`failed files: ${summary.failedFiles.length}`);
      for (const file of summary.failedFiles) lines.push(`  ${file}`);
    }
    if (summary.unhandledErrors > 0) {
      lines.push(`errors outside any test: ${summary.unhandledErrors}`);
    }
    lines.push(
      `tests: ${summary.passed} passed, ${summary.failed} failed, ${summary.skipped} skipped`,
    );
    process.stdout.write(`${lines.join("\n")}\n`);
  }
}
