import { freePort } from "../../src/lib/free-port.ts";

export { ephemeralPorts } from "../../src/lib/free-port.ts";

/**
 * A free PORT whose PORT + 1 is free too, both checked just before use: `npm start` puts the
 * built-in sandbox on PORT + 1. Below the kernel's range for outgoing connections, so no client
 * socket can take either in the meantime (src/lib/free-port.ts).
 */
export function freePortPair(): Promise<number> {
  return freePort(2);
}
