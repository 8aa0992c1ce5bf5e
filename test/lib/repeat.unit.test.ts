import { afterEach, expect, it, vi } from "vitest";
import { repeatEvery } from "../../src/lib/repeat.ts";

afterEach(() => {
  vi.useRealTimers();
});

it("runs at once and on every tick, skipping ticks while a run is under way, and stops after it", async () => {
  vi.useFakeTimers();
  let started = 0;
  let finish: () => void = () => {};
  const loop = repeatEvery(
    1_000,
    () =>
      new Promise<void>((resolve) => {
        started++;
        finish = resolve;
      }),
    { now: true },
  );
  expect(started).toBe(1);
  // The first run is still going: three ticks start nothing.
  await vi.advanceTimersByTimeAsync(3_000);
  expect(started).toBe(1);
  finish();
  await vi.advanceTimersByTimeAsync(1_000);
  expect(started).toBe(2);

  let stopped = false;
  const stopping = loop.stop().then(() => {
    stopped = true;
  });
  await vi.advanceTimersByTimeAsync(0);
  expect(stopped).toBe(false);
  finish();
  await stopping;
  await vi.advanceTimersByTimeAsync(5_000);
  expect(started).toBe(2);
});
