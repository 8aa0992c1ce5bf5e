import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { descendantsOf, listProcesses } from "../helpers/processes.ts";

const ROOT = resolve(import.meta.dirname, "../..");

interface BenchRun {
  child: ChildProcess;
  done: Promise<{ code: number | null; out: string; err: string }>;
}

/** Runs `bench/<file>` as `npm run bench:*` does (under the TypeScript loader). */
function bench(file: string, args: string[], env: Record<string, string> = {}): BenchRun {
  const child = spawn(process.execPath, ["--import", "tsx", `bench/${file}`, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    out += chunk;
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    err += chunk;
  });
  const done = new Promise<{ code: number | null; out: string; err: string }>((resolve) =>
    child.once("exit", (code) => resolve({ code, out, err })),
  );
  return { child, done };
}

/** The table rows a bench printed (markdown rows, header and rule left out). */
function rows(out: string): string[] {
  return out
    .split("\n")
    .filter(
      (line) =>
        line.startsWith("| ") && !line.startsWith("|---") && !/^\| (run|limiter) \|/.test(line),
    );
}

// Every bench at a tiny size, so that none can rot: each must finish and print its rows. The
// figures mean nothing at this size. bench:worker, the flash sale and bench:startup each build
// dist/, so they run one after the other.
describe.concurrent("every bench runs at a tiny size", () => {
  it("bench:throttle (steady)", async () => {
    const { code, out, err } = await bench("throttle.ts", [
      "--backlog",
      "20",
      "--stores",
      "2",
      "--limit",
      "20",
      "--window-ms",
      "500",
      "--live-every-ms",
      "50",
    ]).done;
    expect(code, err).toBe(0);
    // A side whose backlog was done within the first window has no saturated span to measure
    // (at this size, on a fast moment of the machine): it says so instead of a figure.
    const figure = String.raw`(\d+\.\d%|— \(done in the first window\))`;
    expect(out).toMatch(
      new RegExp(
        String.raw`\| hot store utilization while saturated .*\| ${figure} +\| ${figure} +\|`,
      ),
    );
    expect(out).toMatch(/\| total time to drain \(s\) +\| [\d.]+ +\| [\d.]+ +\|/);
  }, 150_000);

  it("bench:dlq", async () => {
    const { code, out, err } = await bench("dlq.ts", [
      "--entries",
      "60",
      "--shops",
      "3",
      "--runs",
      "1",
    ]).done;
    expect(code, err).toBe(0);
    const printed = rows(out).filter((row) => !row.startsWith("| read |"));
    expect(printed).toHaveLength(7);
    expect(printed[0]).toMatch(
      /^\| counts by reason \(`connector status`\) \| 60 \| \d+ \| \d+ \| \d+ \|$/,
    );
    expect(printed[6]).toMatch(
      /^\| counts by reason, first read after an upgrade .* \| 60 \| \d+ \| \| \|$/,
    );
  }, 150_000);

  it("bench:cluster, 1 and 3 shards", async () => {
    const { code, out, err } = await bench("cluster.ts", ["--jobs", "30", "--stores", "6"]).done;
    expect(code, err).toBe(0);
    const printed = rows(out).filter((row) => !row.startsWith("| master |"));
    expect(printed).toHaveLength(6);
    for (const row of printed) expect(row).toMatch(/^\| :\d+ \| \d+ \| \d+ \| [\d.]+ % \|$/);
    expect(out).toMatch(/1 shard\(s\): .* busiest master [\d.]+ %/);
    expect(out).toMatch(/3 shard\(s\): .* busiest master [\d.]+ %/);
  }, 150_000);

  it("bench:ingest, 2 web processes", async () => {
    // With traces on (a local OTLP sink), as the on/off comparison runs it.
    const { code, out, err } = await bench("ingest.ts", ["--otel"], {
      BENCH_SECONDS: "1",
      BENCH_PROCESSES: "2",
    }).done;
    expect(code, err).toBe(0);
    expect(out).toMatch(/^traces: on, exported over OTLP\/HTTP/m);
    expect(out).toMatch(/^spans received by the OTLP sink: [1-9]\d*$/m);
    const printed = rows(out);
    expect(printed).toHaveLength(6);
    expect(printed[0]).toMatch(/^\| bare Hono 200 OK \(bound\), 2 processes \| \d+ \|/);
    // The floor answers every signed webhook (0 errors: its HMAC check passes) with one write.
    expect(printed[1]).toMatch(
      /^\| floor: body, HMAC, JSON.parse, one Redis write, 2 processes \| \d+ \| \d+ \| \d+ \| 0 \| .* \| 1\.0 \|$/,
    );
    for (const row of printed.slice(2))
      expect(row).toMatch(/^\| receiver, 2 processes, .* \| \d+ \| \d+ \| \d+ \| 0 \|/);
  }, 150_000);

  it("bench:worker, then bench:throttle --scenario flash-sale, then bench:startup", async () => {
    const worker = await bench("worker.ts", ["--jobs", "20", "--stores", "2", "--processes", "1"])
      .done;
    expect(worker.code, worker.err).toBe(0);
    expect(worker.out).toMatch(/^traces: off \(no OTLP endpoint/m);
    const workerRows = rows(worker.out);
    expect(workerRows).toHaveLength(3);
    expect(workerRows[0]).toMatch(/^\| bare BullMQ worker, no-op \(1 process\) \| \d+ \|/);
    expect(workerRows[1]).toMatch(
      /^\| floor: the external work alone, SQLite \(1 process\) \| \d+ \| \d+% \| [\d.]+ \([\d.]+×\) \|/,
    );
    expect(workerRows[2]).toMatch(/^\| connector sync worker, SQLite \(1 process\) \| \d+ \|/);

    const flash = await bench("throttle.ts", [
      "--scenario",
      "flash-sale",
      "--burst",
      "20",
      "--window-ms",
      "500",
      "--limit",
      "10",
      "--variant",
      "plain",
      "--workers",
      "1",
    ]).done;
    expect(flash.code, flash.err).toBe(0);
    const flashRows = rows(flash.out);
    expect(flashRows).toHaveLength(2);
    expect(flashRows[0]).toMatch(
      /^\| per-store limiter \| 20 \| 0\.5 s \| plain \| 1 \| [\d.]+ % \|/,
    );
    expect(flashRows[1]).toMatch(
      /^\| BullMQ queue limiter \| 20 \| 0\.5 s \| plain \| 1 \| [\d.]+ % \|/,
    );

    const startup = await bench("startup.ts", ["--starts", "1"]).done;
    expect(startup.code, startup.err).toBe(0);
    const startupRows = rows(startup.out).filter((row) => !row.startsWith("| process |"));
    expect(startupRows.map((row) => row.split(" | ")[0])).toEqual([
      "| connector worker, compile cache warm",
      "| connector worker, compile cache off",
      "| bare BullMQ worker",
    ]);
    for (const row of startupRows) expect(row).toMatch(/ \| [1-9]\d* \| \d+ \| \d+ \| \d+ \|$/);
  }, 150_000);
});

it("a bench whose child process dies stops at once and names it", async () => {
  // Rows of 30 s: without the check the bench would wait on the dead receiver for minutes.
  const run = bench("ingest.ts", [], { BENCH_SECONDS: "30", BENCH_PROCESSES: "2" });
  const receiver = await pollFor(() =>
    descendantsOf(run.child.pid as number).find(
      (info) => info.ppid === run.child.pid && info.command.includes("bench-ingest-server.mjs"),
    ),
  );
  const killedAt = Date.now();
  process.kill(receiver.pid, "SIGKILL");
  const { code, err } = await run.done;
  expect(code).toBe(1);
  expect(err).toContain(
    `bench:ingest: receiver (2 web processes) (pid ${receiver.pid}) was ended by SIGKILL while the bench needed it; stopping`,
  );
  expect(Date.now() - killedAt).toBeLessThan(15_000);
}, 90_000);

async function pollFor<T>(find: () => T | undefined): Promise<T> {
  let found: T | undefined;
  await expect
    .poll(
      () => {
        found = find();
        return found !== undefined;
      },
      { timeout: 60_000, interval: 100 },
    )
    .toBe(true);
  return found as T;
}

it("a bench stopped by a signal stops the processes it started", async () => {
  // kill, or a terminal closed: the bench's redis-server and receivers were left running.
  const run = bench("ingest.ts", [], { BENCH_SECONDS: "30", BENCH_PROCESSES: "1" });
  await pollFor(() =>
    descendantsOf(run.child.pid as number).find((info) =>
      info.command.includes("bench-ingest-server.mjs"),
    ),
  );
  const started = descendantsOf(run.child.pid as number).map((info) => info.pid);
  expect(started.length).toBeGreaterThanOrEqual(2);
  process.kill(run.child.pid as number, "SIGTERM");
  const { code, err } = await run.done;
  expect(code).toBe(143);
  expect(err).toContain("bench:ingest: SIGTERM; stopping the processes it started");
  await expect
    .poll(
      () =>
        listProcesses()
          .filter((info) => started.includes(info.pid))
          .map((i) => i.command),
      {
        timeout: 10_000,
        interval: 100,
      },
    )
    .toEqual([]);
}, 90_000);
