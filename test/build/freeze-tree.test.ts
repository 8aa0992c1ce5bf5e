import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
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
  await forked(pid, () => tree().some((p) => p.pid !== pid), patience.timeout);

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
    await forked(
      pid,
      () => tree().some((p) => !before.has(p.pid) && p.state !== "T"),
      patience.timeout,
    );
  }
}, 300_000);

/**
 * Waits until `seen` says the shell forked. A wait that runs out (seen in suite runs under load,
 * not alone) names what the shell was doing, from the kernel's view of it: its state, what it
 * waits in, its CPU time and its time waiting to run, its pending and blocked signals, and its
 * process group.
 */
async function forked(pid: number, seen: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!seen()) {
    if (Date.now() > deadline)
      throw new Error(`the shell did not fork within ${timeoutMs} ms: ${shellState(pid)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function shellState(pid: number): string {
  const read = (file: string) => {
    try {
      return readFileSync(`/proc/${pid}/${file}`, "utf8").trim();
    } catch (error) {
      return `(${(error as NodeJS.ErrnoException).code})`;
    }
  };
  const status = Object.fromEntries(
    read("status")
      .split("\n")
      .map((line) => line.split(":\t"))
      .filter(([key]) =>
        ["State", "SigPnd", "ShdPnd", "SigBlk", "Cpus_allowed_list"].includes(key ?? ""),
      ),
  );
  return JSON.stringify({
    status,
    wchan: read("wchan"),
    schedstat: read("schedstat"),
    autogroup: read("autogroup"),
    stat: read("stat"),
  });
}
