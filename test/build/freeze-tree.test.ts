import { spawn } from "node:child_process";
import { expect, it, onTestFinished } from "vitest";
import { descendantsOf, freezeTree, listProcesses, thawTree } from "../helpers/processes.ts";

/**
 * `freezeTree` is how a test stops a server of many processes (Postgres: a postmaster that forks
 * a backend per connection) as a frozen machine would. Before, the server's processes were sent
 * SIGSTOP from one listing without waiting: kill() returns before a process stops (it stops when
 * it next runs), so on a loaded machine a root finishing a fork left a child no listing had
 * seen, which went on answering, and a test waiting for the loss to be noticed waited for ever.
 */
it("leaves every process of a tree that keeps forking stopped, on a busy CPU, until thawed", async () => {
  // A busy loop and, on the same CPU at the lowest priority, a shell that forks a short-lived
  // child every 10 ms: the shell runs seldom, as a server does on a loaded machine.
  const busy = spawn("taskset", ["-c", "0", "/bin/sh", "-c", "while :; do :; done"], {
    stdio: "ignore",
  });
  onTestFinished(() => {
    busy.kill("SIGKILL");
  });
  const root = spawn(
    "taskset",
    ["-c", "0", "nice", "-n", "19", "/bin/sh", "-c", "while :; do sleep 0.01; done"],
    { detached: true, stdio: "ignore" },
  );
  const pid = root.pid;
  if (pid === undefined) throw new Error("the shell did not start");
  // SIGKILL ends stopped processes too; the group holds the shell and its children.
  onTestFinished(() => {
    process.kill(-pid, "SIGKILL");
  });
  const tree = () => listProcesses().filter((p) => p.pid === pid || p.pgid === pid);
  // The shell gets the CPU seldom by design, more seldom beside other files of the suite: each
  // wait for it to fork is generous (a fork is what is waited for, whatever the child runs yet).
  const patience = { timeout: 60_000 };
  await expect.poll(() => tree().some((p) => p.pid !== pid), patience).toBe(true);

  for (let round = 0; round < 10; round++) {
    await freezeTree(pid);
    const frozen = tree();
    expect(frozen.map((p) => `${p.command}: ${p.state}`)).toEqual(
      frozen.map((p) => `${p.command}: T`),
    );
    expect(descendantsOf(pid).every((child) => frozen.some((p) => p.pid === child.pid))).toBe(true);
    thawTree(pid);
    // Thawed, the shell forks again: its loop goes on.
    const before = new Set(frozen.map((p) => p.pid));
    await expect
      .poll(() => tree().some((p) => !before.has(p.pid) && p.state !== "T"), patience)
      .toBe(true);
  }
}, 300_000);
