import { spawn } from "node:child_process";
import { expect, it } from "vitest";
import { stillRunning } from "../helpers/leak-check.ts";
import { listProcesses } from "../helpers/processes.ts";

function started(...args: string[]) {
  const child = spawn("sleep", args, { stdio: "ignore" });
  const info = listProcesses().find((p) => p.pid === child.pid);
  if (!info) throw new Error("sleep did not start");
  return { child, info };
}

it("does not count a process that finishes exiting within the grace", async () => {
  // The run's end can meet a child already told to stop, still in its exit: it is not left behind.
  const { child, info } = started("30");
  const exited = new Promise((done) => child.once("exit", done));
  const check = stillRunning([info], 10_000);
  child.kill("SIGTERM");
  await exited;
  expect(await check).toEqual([]);
});

it("still names a process that outlives the grace", async () => {
  const { child, info } = started("30");
  try {
    const left = await stillRunning([info], 200);
    expect(left.map((p) => p.pid)).toEqual([child.pid]);
  } finally {
    child.kill("SIGKILL");
  }
});
