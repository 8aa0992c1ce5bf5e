import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const SRC = resolve(import.meta.dirname, "../../src");

/** Each `new Worker(` of BullMQ in src/ with the text of the call, up to its options. */
function workerCalls(): { file: string; call: string }[] {
  const calls: { file: string; call: string }[] = [];
  for (const path of readdirSync(SRC, { recursive: true, encoding: "utf8" })) {
    if (!path.endsWith(".ts")) continue;
    const text = readFileSync(join(SRC, path), "utf8");
    for (const match of text.matchAll(/new Worker\b/g)) {
      // The queue's name and the processor come before the options' opening brace.
      const rest = text.slice(match.index);
      calls.push({ file: path, call: rest.slice(0, rest.indexOf("{")) });
    }
  }
  return calls;
}

/**
 * A worker that runs whatever job it is given completes a newer version's kind of job unrun in a
 * rolling deploy (src/jobs/job-kinds.ts). So each BullMQ worker of the connector names the kinds
 * it runs: its processor is `knownKindsOnly(…)`, or a function that file makes with it.
 */
describe("the connector's BullMQ workers", () => {
  it("each run only the kinds of job they know", () => {
    const calls = workerCalls();
    expect(calls.length).toBeGreaterThanOrEqual(5);
    for (const { file, call } of calls) {
      const text = readFileSync(join(SRC, file), "utf8");
      const processor = /new Worker(?:<[^>]*>)?\(\s*[^,]+,\s*([A-Za-z]+)/.exec(call)?.[1];
      const wrapped =
        processor === "knownKindsOnly" ||
        (processor !== undefined &&
          new RegExp(`const ${processor} = knownKindsOnly\\(`).test(text));
      expect({ file, processor, wrapped }).toEqual({ file, processor, wrapped: true });
    }
  });
});
