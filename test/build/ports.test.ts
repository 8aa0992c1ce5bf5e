import { expect, it } from "vitest";
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
