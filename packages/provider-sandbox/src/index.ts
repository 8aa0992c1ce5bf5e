import { type ServerType, serve } from "@hono/node-server";
import { createSandboxApp, type SandboxApp, type SandboxOptions } from "./app.ts";

export {
  type Arrival,
  createSandboxApp,
  type SandboxApp,
  type SandboxOptions,
  SandboxState,
} from "./app.ts";
export {
  type DeliveryOptions,
  type DeliveryRecord,
  EventSender,
  type SandboxClaim,
  type WebhookSubscriber,
} from "./events.ts";
export type { SandboxFaults } from "./faults.ts";
export type { RegistrationInput, StoredRegistration } from "./registrations.ts";

export interface SandboxHandle extends Omit<SandboxApp, "app"> {
  /** API base, ending in /v1. */
  url: string;
  /** Token requests go to `${authUrl}/oauth/token`. */
  authUrl: string;
  port: number;
  close(): Promise<void>;
}

/** Starts the provider sandbox over real HTTP on loopback. */
export async function startSandbox(options: SandboxOptions = {}): Promise<SandboxHandle> {
  const sandbox = createSandboxApp(options);
  const host = options.host ?? "127.0.0.1";
  const { server, port } = await new Promise<{ server: ServerType; port: number }>(
    (resolve, reject) => {
      const s = serve(
        { fetch: sandbox.app.fetch, hostname: host, port: options.port ?? 0 },
        (info) => resolve({ server: s, port: info.port }),
      );
      s.once("error", reject);
    },
  );
  const origin = `http://${host}:${port}`;
  const { app: _app, ...rest } = sandbox;
  return {
    ...rest,
    url: `${origin}/v1`,
    authUrl: origin,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        if ("closeAllConnections" in server) server.closeAllConnections();
        sandbox.events.stop();
        server.close(() => {
          sandbox.state.file?.close();
          resolve();
        });
      }),
  };
}
