import { type ServerType, serve } from "@hono/node-server";
import { ConfigError } from "../config/env.ts";
import { LINGERING_CLOSE } from "./lingering-close.ts";

/**
 * Serves `fetch` on host:port and resolves once it listens; an answer sent before its request's
 * body was read closes the connection with a lingering close (./lingering-close.ts). A port
 * another program holds (or one this user may not bind) is a configuration error naming `what`
 * (the variable), never an unhandled 'error' event.
 */
export function listen(
  fetch: (request: Request) => Response | Promise<Response>,
  options: { port: number; host: string; what: string },
): Promise<{ server: ServerType; port: number }> {
  return new Promise((resolve, reject) => {
    const server = serve(
      { fetch, port: options.port, hostname: options.host, serverOptions: LINGERING_CLOSE },
      (info) => resolve({ server, port: info.port }),
    );
    server.once("error", (error: NodeJS.ErrnoException) => {
      const why =
        error.code === "EADDRINUSE"
          ? "is in use by another program"
          : error.code === "EACCES"
            ? "may not be used by this user"
            : `cannot be used (${error.code ?? error.message})`;
      reject(
        new ConfigError(
          `${options.what} ${options.host}:${options.port} ${why}: stop that program or choose another port`,
        ),
      );
    });
  });
}
