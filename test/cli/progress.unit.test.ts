import { describe, expect, it } from "vitest";
import { progress } from "../../src/cli/progress.ts";

/** A stream as the CLI's stderr: what was written, and whether it is a terminal. */
function stream(isTTY: boolean) {
  const written: string[] = [];
  return { isTTY, written, write: (text: string) => written.push(text) };
}

const bulk = (out: ReturnType<typeof stream>, every?: number) =>
  progress<{ note: string }>({
    bar: "{bar} {value}/{total} | {note}",
    line: (done, total, p) => `${done} of ${total} (${p.note})`,
    ...(every ? { every } : {}),
    stream: out,
  });

/**
 * The long commands' progress (a followed backfill, a bulk dead-letter retry, a product import):
 * a log or CI must see the run going on, a line a step rather than one per item, and nothing of
 * a terminal's bar in it.
 */
describe("progress, not in a terminal", () => {
  it("writes a line each time it changes, and none when it does not", () => {
    const out = stream(false);
    const show = bulk(out);
    show.update(0, 3, { note: "queued" });
    show.update(0, 3, { note: "queued" });
    show.update(0, 3, { note: "running" });
    show.update(2, 3, { note: "running" });
    show.update(3, 3, { note: "done" });
    show.stop();
    expect(out.written).toEqual([
      "0 of 3 (queued)\n",
      "0 of 3 (running)\n",
      "2 of 3 (running)\n",
      "3 of 3 (done)\n",
    ]);
  });

  it("writes one line per step of `every` items and one at the end", () => {
    const out = stream(false);
    const show = bulk(out, 1_000);
    for (let done = 8; done <= 2_500; done += 8) show.update(done, 2_500, { note: "n" });
    show.update(2_500, 2_500, { note: "n" });
    expect(out.written).toEqual(["1000 of 2500 (n)\n", "2000 of 2500 (n)\n", "2500 of 2500 (n)\n"]);
  });

  it("writes no escape sequence", () => {
    const out = stream(false);
    const show = bulk(out);
    show.update(1, 2, { note: "x" });
    show.stop();
    expect(out.written.join("")).not.toContain("\u001b");
  });
});

describe("progress in a terminal", () => {
  it("draws a bar with the payload, and stop ends its line", () => {
    const out = stream(true);
    const show = bulk(out);
    show.update(1, 4, { note: "first" });
    show.update(3, 4, { note: "later" });
    show.stop();
    show.stop();
    const drawn = out.written.join("");
    expect(drawn).toContain("1/4 | first");
    expect(drawn).toContain("3/4 | later");
    expect(drawn.endsWith("\n")).toBe(true);
  });

  it("draws nothing when nothing was shown", () => {
    const out = stream(true);
    bulk(out).stop();
    expect(out.written).toEqual([]);
  });
});
