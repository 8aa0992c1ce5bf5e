import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { descendantsOf, listProcesses, type ProcessInfo } from "./processes.ts";

/**
 * The run's check that no test leaves a process behind. It is the first global setup, so its
 * teardown runs last: after the test workers have ended and the other global setups have
 * stopped the run's shared servers. Whatever the run started and is still alive then is named,
 * killed, and fails the run:
 *
 * - any process below vitest's own;
 * - a process of vitest's process group started during the run, also once orphaned (its
 *   parent died, as a redis-server whose connector was killed) and adopted by whichever process
 *   reaps orphans on the machine; but not another run's: when this run was started by another
 *   (test/build/unit-tier.test.ts runs one in the suite's process group), a test worker of the
 *   other run, or an orphan of it, is in the group too. A process is the other run's when one
 *   of the group that ran before this run began started it, or when its `TMPDIR` is the other
 *   run's directory;
 * - any process working in the run's temporary directory: the run gets one of its own
 *   (`TMPDIR`, which the workers and the processes they start inherit), so a redis-server,
 *   postgres or chromium a test started in a `mkdtemp` directory is found even when it left
 *   the process group.
 *
 * Processes that were alive when the run began (vitest's own helpers) are never counted.
 */
export default function setup() {
  const runDir = mkdtempSync(join(tmpdir(), "connector-test-run-"));
  // PostgreSQL runs as its own user (test/helpers/postgres.ts) in a directory in here.
  chmodSync(runDir, 0o755);
  process.env.TMPDIR = runDir;
  const before = new Set(listProcesses().map(key));
  const pgid = listProcesses().find((info) => info.pid === process.pid)?.pgid;

  return async () => {
    const leftovers = await stillRunning(findLeftovers({ runDir, before, pgid }), EXIT_GRACE_MS);
    rmSync(runDir, { recursive: true, force: true });
    if (leftovers.length === 0) return;
    await kill(leftovers);
    throw new Error(
      `${leftovers.length} process(es) started by this run were still running at its end (now killed); the test that started each must stop it:\n${leftovers
        .map((info) => `  pid ${info.pid}: ${info.command}${info.cwd ? ` (in ${info.cwd})` : ""}`)
        .join("\n")}`,
    );
  };
}

const key = (info: ProcessInfo) => `${info.pid}:${info.startTicks}`;

/**
 * How long a process found at the end may take to finish exiting. A test's child that was told
 * to stop, or a test worker's, can still be in the kernel's exit path when the check runs: its
 * command line already empty, gone a few milliseconds later. Only what is still there after
 * this is left behind.
 */
const EXIT_GRACE_MS = 5_000;

/** Those of `processes` still running once each has had `graceMs` to go away. */
export async function stillRunning(
  processes: ProcessInfo[],
  graceMs: number,
): Promise<ProcessInfo[]> {
  const deadline = Date.now() + graceMs;
  let left = processes;
  for (;;) {
    const now = new Set(listProcesses().map(key));
    left = left.filter((info) => now.has(key(info)));
    if (left.length === 0 || Date.now() >= deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export function findLeftovers(run: {
  runDir: string;
  before: Set<string>;
  pgid: number | undefined;
}): ProcessInfo[] {
  const all = listProcesses();
  const mine = new Set(descendantsOf(process.pid, all).map((info) => info.pid));
  const byPid = new Map(all.map((info) => [info.pid, info]));
  const anotherRuns = (info: ProcessInfo) => {
    for (
      let parent = byPid.get(info.ppid);
      parent !== undefined && parent.pid !== 1 && parent.pid !== process.pid;
      parent = byPid.get(parent.ppid)
    ) {
      if (parent.pgid === run.pgid && run.before.has(key(parent))) return true;
    }
    return runDirOf(info.pid)?.startsWith(`${run.runDir}/`) === false;
  };
  const inRunDir = (info: ProcessInfo) =>
    info.cwd === run.runDir ||
    info.cwd.startsWith(`${run.runDir}/`) ||
    info.command.includes(`${run.runDir}/`);
  return all.filter(
    (info) =>
      info.pid !== process.pid &&
      !isVitestWatchdog(info) &&
      !run.before.has(key(info)) &&
      (mine.has(info.pid) ||
        (run.pgid !== undefined && info.pgid === run.pgid && !anotherRuns(info)) ||
        inRunDir(info)),
  );
}

/**
 * The run directory a process was started in (`TMPDIR`, which each run sets to its own and its
 * processes inherit), if its environment names one. A nested run's directory is inside the run's
 * that started it.
 */
function runDirOf(pid: number): string | undefined {
  try {
    const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    const tmpdir = environ.find((entry) => entry.startsWith("TMPDIR="))?.slice("TMPDIR=".length);
    return tmpdir && /[\\/]connector-test-run-[^\\/]+$/.test(tmpdir) ? `${tmpdir}/` : undefined;
  } catch {
    return undefined; // gone meanwhile
  }
}

/**
 * vitest's own watchdog, which ends after the main process. It names itself "vitest-watchdog"
 * once it runs; one that has just started still shows its script (a suite run under load found
 * it so, and counted it as a leak).
 */
const isVitestWatchdog = (info: ProcessInfo) =>
  info.command === "vitest-watchdog" ||
  /[\\/]node_modules[\\/]vitest[\\/]dist[\\/]workers[\\/]watchdog\.js$/.test(info.command);

async function kill(processes: ProcessInfo[]): Promise<void> {
  const signal = (info: ProcessInfo, name: NodeJS.Signals) => {
    try {
      process.kill(info.pid, name);
    } catch {
      // already gone
    }
  };
  for (const info of processes) signal(info, "SIGTERM");
  const deadline = Date.now() + 3_000;
  const alive = () => {
    const now = new Set(listProcesses().map(key));
    return processes.filter((info) => now.has(key(info)));
  };
  while (alive().length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  for (const info of alive()) signal(info, "SIGKILL");
}
