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
 * A free PORT whose PORT + 1 is free too, both checked just before use: `npm start` puts the
 * built-in sandbox on PORT + 1, and a port picked alone now and then had its neighbour held by
 * another test's process.
 */
export async function freePortPair(): Promise<number> {
  for (let tries = 0; tries < 50; tries++) {
    const port = await freePort();
    if (port < 65_535 && (await isFree(port + 1))) return port;
  }
  throw new Error("no two consecutive free ports found");
}
