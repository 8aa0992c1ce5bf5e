import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/**
 * The kernel's range of local ports for outgoing connections (Linux's default 32768–60999). A
 * port in it that is free now can be taken the next moment by any client socket of any process
 * (a Redis or HTTP client), which is how a port picked there was now and then found held by the
 * time it was bound (`EADDRINUSE`).
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

/** Whether `port` can be bound on loopback now. */
export function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A port the kernel picks (in its range for outgoing connections): the last resort. */
function kernelPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

const LOWEST = 10_000;

/**
 * A free loopback port for a server about to be started (a private redis-server, a test's
 * HTTP server), with `count` free ports from it on (`npm start` puts the built-in sandbox on
 * PORT + 1). Picked at random below the kernel's range for outgoing connections and checked
 * just before use, so no client socket can take it in the meantime; only another picker
 * choosing the same port could. A kernel whose range leaves no room below gets its own pick.
 */
export async function freePort(count = 1): Promise<number> {
  const { low } = ephemeralPorts();
  const span = low - count - LOWEST;
  if (span <= 100) return kernelPort();
  for (let tries = 0; tries < 200; tries++) {
    const port = LOWEST + Math.floor(Math.random() * span);
    let free = true;
    for (let i = 0; i < count && free; i++) free = await isFree(port + i);
    if (free) return port;
  }
  throw new Error(`no ${count} free consecutive ports found below ${low}`);
}
