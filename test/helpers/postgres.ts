import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import {
  chownSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort } from "../../src/lib/redis-server.ts";
import { selfSignedCertificate } from "./certificate.ts";

/** The one user the run's server asks for a password (scram-sha-256); no role is created. */
export const PASSWORD_CHECKED_USER = "password_checked";
/** A user the server takes only over TLS (as a managed Postgres takes every user); no role. */
export const TLS_ONLY_USER = "tls_only";

/** A private PostgreSQL server on loopback, for the tests that run the stores on Postgres. */
export interface PostgresHandle {
  /** postgres://connector@127.0.0.1:port/postgres */
  url: string;
  /** With `tls`: the server's self-signed certificate (PEM), its own CA. */
  certificate: string;
  /** A fresh database on this server, its URL. */
  createDatabase(name: string): Promise<string>;
  /** The postmaster's pid (its processes are its children). */
  pid(): number;
  /** kill -9 the server (the outage tests), and start it again on the same port and data. */
  kill(): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** Debian's server binaries (`apt-get install postgresql`), newest major first. */
export function postgresBinDir(): string | null {
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, "bin", "initdb")))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors[0]) return join(root, majors[0], "bin");
  // Elsewhere (Homebrew): the directory of the initdb on PATH.
  const onPath = (process.env.PATH ?? "")
    .split(":")
    .find((dir) => dir && existsSync(join(dir, "initdb")));
  return onPath ?? null;
}

/**
 * initdb refuses to run as root: as root, the server runs as Debian's `postgres` user (the
 * package creates it), on a data directory it owns.
 */
function asServerUser(command: string, args: string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [command, args];
  return ["runuser", ["-u", "postgres", "--", command, ...args]];
}

export async function startPostgres(
  options: { preload?: string[]; tls?: boolean } = {},
): Promise<PostgresHandle> {
  const bin = postgresBinDir();
  if (!bin) {
    throw new Error("PostgreSQL's server is not installed: apt-get install postgresql");
  }
  const dir = mkdtempSync(join(tmpdir(), "connector-pg-"));
  const data = join(dir, "data");
  const owner =
    process.getuid?.() === 0
      ? {
          uid: Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim()),
          gid: Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim()),
        }
      : undefined;
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const [initdb, initArgs] = asServerUser(join(bin, "initdb"), [
    "-D",
    data,
    "-U",
    "connector",
    "--auth=trust",
    "-E",
    "UTF8",
    "--no-sync",
  ]);
  execFileSync(initdb, initArgs, { stdio: "ignore" });
  // Every user is trusted but two: one whose password is checked, one refused without TLS. Their
  // refusals can be tested without changing how every other test connects.
  const hba = join(data, "pg_hba.conf");
  writeFileSync(
    hba,
    [
      `host all ${PASSWORD_CHECKED_USER} 127.0.0.1/32 scram-sha-256`,
      `hostnossl all ${TLS_ONLY_USER} 127.0.0.1/32 reject`,
      readFileSync(hba, "utf8"),
    ].join("\n"),
  );
  // With `tls`, a certificate of its own (for localhost), signed by no CA Node knows, as a
  // managed Postgres's private CA looks to Node; a client that does not ask for TLS connects in
  // the clear.
  if (options.tls) {
    const { certificate, key } = selfSignedCertificate(data);
    if (owner) for (const file of [certificate, key]) chownSync(file, owner.uid, owner.gid);
  }
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    const [postgres, args] = asServerUser(join(bin, "postgres"), [
      "-D",
      data,
      "-p",
      String(port),
      "-k",
      dir,
      "-c",
      "listen_addresses=127.0.0.1",
      // Test data: a commit need not reach the disk (the outage tests kill the processes, not
      // the machine, so what the server wrote is still there after a restart).
      "-c",
      "fsync=off",
      "-c",
      "logging_collector=off",
      "-c",
      "max_connections=300",
      "-c",
      `ssl=${options.tls ? "on" : "off"}`,
      ...(options.preload ? ["-c", `shared_preload_libraries=${options.preload.join(",")}`] : []),
    ]);
    child = spawn(postgres, args, {
      stdio: ["ignore", "ignore", openSync(join(dir, "server.log"), "a")],
    });
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        execFileSync(join(bin, "pg_isready"), ["-h", "127.0.0.1", "-p", String(port)], {
          stdio: "ignore",
        });
        return;
      } catch {
        if (child.exitCode !== null) {
          const log = readFileSync(join(dir, "server.log"), "utf8").trim().split("\n").slice(-3);
          throw new Error(`postgres exited at start-up: ${log.join(" / ")}`);
        }
        if (Date.now() > deadline) throw new Error("postgres did not start within 20 s");
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  await start();
  /**
   * kill -9 of the whole server, as a crashed host or container leaves it: its processes first
   * (backends, WAL writer…), then the postmaster (its pid file names it: under runuser the child
   * is runuser).
   */
  const kill = async () => {
    const pidFile = join(data, "postmaster.pid");
    const pid = existsSync(pidFile)
      ? Number(readFileSync(pidFile, "utf8").split("\n")[0])
      : undefined;
    // A killed server leaves its pid file: its pid may be another process's by now (a second
    // kill, or stop() after a test killed it), whose children pkill -P would kill. Only a
    // postmaster of this data directory is signalled.
    if (pid !== undefined && postmasterOf(pid, data)) {
      try {
        execFileSync("pkill", ["-KILL", "-P", String(pid)], { stdio: "ignore" });
      } catch {
        // no children
      }
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    child?.kill("SIGKILL");
    for (let i = 0; i < 100; i++) {
      try {
        execFileSync(join(bin, "pg_isready"), ["-h", "127.0.0.1", "-p", String(port)], {
          stdio: "ignore",
        });
      } catch {
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const url = `postgres://connector@127.0.0.1:${port}/postgres`;
  return {
    url,
    certificate: join(data, "server.crt"),
    pid: () => Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]),
    async createDatabase(name) {
      execFileSync(
        join(bin, "createdb"),
        ["-h", "127.0.0.1", "-p", String(port), "-U", "connector", name],
        {
          stdio: "ignore",
        },
      );
      return `postgres://connector@127.0.0.1:${port}/${name}`;
    },
    kill,
    async restart() {
      await kill();
      // A killed server leaves its pid file, which postgres removes itself once that process is
      // gone; until the kernel has reaped it, a start can still find it and stop: try again.
      for (let attempt = 1; ; attempt++) {
        try {
          await start();
          return;
        } catch (error) {
          if (attempt >= 5) throw error;
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    },
    async stop() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A fresh, empty database on the run's PostgreSQL server: its URL (DATABASE_URL). */
export async function createTestDatabase(adminUrl: string): Promise<string> {
  const name = `t_${randomUUID().replaceAll("-", "")}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

const watchedSockets = new WeakSet<object>();

/**
 * Calls `onWrite` on every socket write of a pg client's connection from now on (a round trip
 * starts with one), once per connection however often it is asked.
 */
export function onSocketWrites(client: pg.ClientBase, onWrite: () => void): void {
  const socket = (client as pg.ClientBase & { connection: pg.Connection }).connection.stream;
  if (watchedSockets.has(socket)) return;
  watchedSockets.add(socket);
  const { _write, _writev } = socket as unknown as Record<string, (...a: unknown[]) => void>;
  Object.assign(socket, {
    _write: (...a: unknown[]) => {
      onWrite();
      return _write?.apply(socket, a);
    },
    _writev: (...a: unknown[]) => {
      onWrite();
      return _writev?.apply(socket, a);
    },
  });
}

/**
 * Ends, from the server's side, the connections to `url`'s database that `which` picks (a
 * condition on pg_stat_activity), as a restart or an administrator does; the number ended.
 */
export async function terminateBackends(url: string, which = "true"): Promise<number> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    const ended = await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND (${which})`,
    );
    return ended.rowCount ?? 0;
  } finally {
    await admin.end();
  }
}

/** Whether `pid` is a running postmaster of the data directory `data` (its command line names it). */
function postmasterOf(pid: number, data: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes(data);
  } catch {
    return false; // gone
  }
}
