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
 * The ports the Fetch Standard blocks ("bad ports"): a browser, and Node's own fetch (undici),
 * refuse to connect to them ("fetch failed: bad port"). A test's server picked on 10080 failed
 * that way, and the app's page there would not open in a browser.
 */
export const FETCH_BLOCKED_PORTS: ReadonlySet<number> = new Set([
  1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102,
  103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465,
  512, 513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993,
  995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668,
  6669, 6679, 6697, 10080,
]);

/**
 * A free loopback port for a server about to be started (a private redis-server, a test's
 * HTTP server), with `count` free ports from it on (`npm start` puts the built-in sandbox on
 * PORT + 1). Picked at random below the kernel's range for outgoing connections and checked
 * just before use, so no client socket can take it in the meantime; only another picker
 * choosing the same port could. Never one a browser or fetch refuses (FETCH_BLOCKED_PORTS). A
 * kernel whose range leaves no room below gets its own pick.
 */
export async function freePort(count = 1): Promise<number> {
  const { low } = ephemeralPorts();
  const span = low - count - LOWEST;
  if (span <= 100) return kernelPort();
  for (let tries = 0; tries < 200; tries++) {
    const port = LOWEST + Math.floor(Math.random() * span);
    let free = true;
    for (let i = 0; i < count && free; i++) {
      free = !FETCH_BLOCKED_PORTS.has(port + i) && (await isFree(port + i));
    }
    if (free) return port;
  }
  throw new Error(`no ${count} free consecutive ports found below ${low}`);
}
