import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** One process of the machine, from /proc. */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  /** Start time in clock ticks after boot (field 22 of /proc/<pid>/stat). */
  startTicks: number;
  command: string;
  /** Its state letter (field 3 of /proc/<pid>/stat): R running, S sleeping, T stopped… */
  state: string;
  /** Its working directory; ends in " (deleted)" when that directory was removed. */
  cwd: string;
}

function readProcess(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces and parentheses: the fields start after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const state = fields[0];
    if (state === undefined || state === "Z" || state === "X") return undefined; // exited
    const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
    let cwd = "";
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      // another user's process
    }
    return {
      pid,
      ppid: Number(fields[1]),
      pgid: Number(fields[2]),
      startTicks: Number(fields[19]),
      command,
      state,
      cwd,
    };
  } catch {
    return undefined; // gone meanwhile
  }
}

/**
 * A process as a test saw it: its pid, and when it started. The kernel gives a pid to another
 * process once its own has exited (pid_max is 32,768 on the machines this runs on, and the
 * suite starts tens of thousands), so a pid kept to be signalled later is checked against its
 * start time first: a test's cleanup must not stop or kill another file's process.
 */
export type SeenProcess = Pick<ProcessInfo, "pid" | "startTicks">;

/** The live process with this pid, as seen now; undefined when there is none (or its zombie). */
export function seeProcess(pid: number): SeenProcess | undefined {
  const info = readProcess(pid);
  return info && { pid, startTicks: info.startTicks };
}

/** Signals the process only while it is still the one seen; whether it did. */
export function signalSeen(seen: SeenProcess, name: NodeJS.Signals): boolean {
  if (readProcess(seen.pid)?.startTicks !== seen.startTicks) return false;
  try {
    process.kill(seen.pid, name);
    return true;
  } catch {
    return false; // gone meanwhile
  }
}

/** Every live process on the machine (Linux). */
export function listProcesses(): ProcessInfo[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readProcess(Number(name)))
    .filter((info): info is ProcessInfo => info !== undefined);
}

/** Live processes that run in `dir` or below it (also once `dir` has been deleted). */
export function processesIn(dir: string): ProcessInfo[] {
  return listProcesses().filter(
    (info) => info.cwd === dir || info.cwd.startsWith(`${dir}/`) || info.cwd === `${dir} (deleted)`,
  );
}

/** `pid` and every process below it. */
export function descendantsOf(pid: number, all = listProcesses()): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  const parents = new Set([pid]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const info of all) {
      if (!parents.has(info.pid) && parents.has(info.ppid)) {
        parents.add(info.pid);
        found.push(info);
        grew = true;
      }
    }
  }
  return found;
}

const stoppedOrGone = (pid: number) => {
  const state = readProcess(pid)?.state;
  return state === undefined || state === "T" || state === "t";
};

const signal = (pid: number, name: NodeJS.Signals) => {
  try {
    process.kill(pid, name);
  } catch {
    // gone meanwhile
  }
};

/**
 * A process acts on SIGSTOP only when it next runs: one starved of the CPU (freeze-tree's shell
 * at nice 19 beside a busy loop, with the suite's other files beside it) may wait for that as
 * long as it waits to fork, which that test allows 60 s. The deadline only stops a hang; a
 * stopped process ends the wait at once.
 */
const STOP_PATIENCE_MS = 120_000;

async function untilStopped(pids: readonly number[]): Promise<void> {
  const deadline = Date.now() + STOP_PATIENCE_MS;
  while (!pids.every(stoppedOrGone)) {
    if (Date.now() > deadline) {
      throw new Error(`processes ${pids.join(", ")} did not stop in ${STOP_PATIENCE_MS / 1000} s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * Stops `pid` and every process below it (SIGSTOP), as a frozen machine would: the root first,
 * waited for until it is stopped, so that it forks nothing more, then its descendants, listed
 * again until no listing finds one still running. kill() returns before the signal is acted on:
 * a root that finishes a fork meanwhile (a Postgres postmaster starting a backend for a new
 * connection) leaves a child the first listing can miss, which then answers for a stopped server.
 */
export async function freezeTree(pid: number): Promise<void> {
  signal(pid, "SIGSTOP");
  await untilStopped([pid]);
  for (;;) {
    const running = descendantsOf(pid).filter((child) => !stoppedOrGone(child.pid));
    if (running.length === 0) return;
    for (const child of running) signal(child.pid, "SIGSTOP");
    await untilStopped(running.map((child) => child.pid));
  }
}

/** Lets a tree `freezeTree` stopped go on (SIGCONT to `pid` and every process below it). */
export function thawTree(pid: number): void {
  for (const child of descendantsOf(pid)) signal(child.pid, "SIGCONT");
  signal(pid, "SIGCONT");
}
