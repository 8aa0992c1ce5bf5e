import { createRequire } from "node:module";
import { expect, it, vi } from "vitest";
import { FETCH_BLOCKED_PORTS } from "../../src/lib/free-port.ts";
import { freePort } from "../../src/lib/redis-server.ts";
import { ephemeralPorts, freePortPair } from "../helpers/ports.ts";

it("picks PORT and PORT + 1 outside the range the kernel hands to outgoing connections", async () => {
  // Inside that range any client socket may take PORT + 1 between the check and the bind.
  const { low, high } = ephemeralPorts();
  for (let i = 0; i < 20; i++) {
    const port = await freePortPair();
    for (const p of [port, port + 1]) expect(p < low || p > high, `port ${p}`).toBe(true);
  }
});

it("picks every free port outside that range, so no client socket takes it before it is bound", async () => {
  // A test's server (or the private redis-server) bound to a port that a Redis or HTTP client
  // of another test had just been given failed with EADDRINUSE.
  const { low, high } = ephemeralPorts();
  for (let i = 0; i < 20; i++) {
    const port = await freePort();
    expect(port < low || port > high, `port ${port}`).toBe(true);
  }
});

it("never picks a port that browsers and fetch refuse to connect to", async () => {
  // A test's HTTP server was given 10080, and every fetch to it failed with "bad port".
  const { low } = ephemeralPorts();
  const span = low - 1 - 10_000;
  const random = vi
    .spyOn(Math, "random")
    .mockReturnValueOnce((80 + 0.5) / span)
    .mockReturnValueOnce((81 + 0.5) / span);
  try {
    expect(await freePort()).toBe(10_081);
  } finally {
    random.mockRestore();
  }
  // The list is the Fetch Standard's, as Node's fetch applies it.
  const { badPorts } = createRequire(import.meta.url)("undici/lib/web/fetch/constants.js") as {
    badPorts: string[];
  };
  expect([...FETCH_BLOCKED_PORTS]).toEqual(badPorts.map(Number));
});
