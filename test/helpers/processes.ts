import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** One process of the machine, from /proc. */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  /** Start time in clock ticks after boot (field 22 of /proc/<pid>/stat). */
  startTicks: number;
  command: string;
  /** Its working directory; ends in " (deleted)" when that directory was removed. */
  cwd: string;
}

function readProcess(pid: number): ProcessInfo | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces and parentheses: the fields start after the last ")".
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const state = fields[0];
    if (state === "Z" || state === "X") return undefined; // exited, waiting to be reaped
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
      cwd,
    };
  } catch {
    return undefined; // gone meanwhile
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
