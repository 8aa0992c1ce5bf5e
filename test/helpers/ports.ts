import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { freePort } from "../../src/lib/redis-server.ts";

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/**
 * The kernel's range of local ports for outgoing connections (Linux's default 32768–60999). A
 * port in it that is free now can be taken the next moment by any client socket of any process
 * (a test's Redis or HTTP client), which is how `PORT + 1` of a pair picked there was now and
 * then found held by the time the connector bound it.
 */
export function ephemeralPorts(): { low: number; high: number } {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    if (low && high) return { low, high };
  } catch {
    // not Linux: the usual range
  }
  return { low: 32_768, high: 60_999 };
}

const LOWEST = 10_000;

/**
 * A free PORT whose PORT + 1 is free too, both checked just before use: `npm start` puts the
 * built-in sandbox on PORT + 1. Picked at random below the kernel's range for outgoing
 * connections, so no client socket can take either in the meantime; only another test picking
 * the same pair could, and both are checked.
 */
export async function freePortPair(): Promise<number> {
  const { low } = ephemeralPorts();
  const span = low - 2 - LOWEST;
  for (let tries = 0; tries < 200; tries++) {
    const port = span > 100 ? LOWEST + Math.floor(Math.random() * span) : await freePort(); // odd kernels
    if (port < 65_535 && (await isFree(port)) && (await isFree(port + 1))) return port;
  }
  throw new Error("no two consecutive free ports found");
}
