import { expect, it } from "vitest";
import { ephemeralPorts, freePortPair } from "../helpers/ports.ts";

it("picks PORT and PORT + 1 outside the range the kernel hands to outgoing connections", async () => {
  // Inside that range any client socket may take PORT + 1 between the check and the bind.
  const { low, high } = ephemeralPorts();
  for (let i = 0; i < 20; i++) {
    const port = await freePortPair();
    for (const p of [port, port + 1]) expect(p < low || p > high, `port ${p}`).toBe(true);
  }
});
