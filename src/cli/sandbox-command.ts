import { type Command, InvalidArgumentError } from "commander";
import { ConfigError } from "../config/env.ts";
import { type RuntimeConfig, sandboxStatePath } from "../config/runtime-config.ts";
import { loadDevTool } from "../lib/dev-tools.ts";
import { httpUrl, wholeNumber } from "./arguments.ts";

const storeList = (value: string) => {
  const ids = value.split(",").map((v) => Number(v.trim()));
  if (ids.some((n) => !Number.isInteger(n) || n <= 0))
    throw new InvalidArgumentError("must be store IDs such as 1001,1002");
  return ids;
};

export function registerSandboxCommand(program: Command, config: RuntimeConfig) {
  program
    .command("sandbox")
    .description("run the provider sandbox: the provider API simulated locally, over HTTP")
    .option("--port <port>", "port (0 = a free one)", wholeNumber({ min: 0, max: 65535 }), 0)
    .option("--client-id <id>", "client ID it accepts (generated when omitted)")
    .option("--client-secret <secret>", "client secret it accepts (generated when omitted)")
    .option("--stores <ids>", "store IDs the client covers", storeList, [1001])
    .option("--rate-limit <n>", "requests per window per store", wholeNumber({ min: 1 }), 100)
    .option(
      "--window-ms <ms>",
      "rate-limit window in milliseconds",
      wholeNumber({ min: 1 }),
      60_000,
    )
    .option("--registrations <n>", "registrations seeded per store", wholeNumber({ min: 0 }), 25)
    .option(
      "--control",
      "serve /_sandbox/* (state, faults, budget use, registrations; claims and their webhooks) for test harnesses",
    )
    .option(
      "--webhook-url <url>",
      "send the provider's events (claims, registrations) to this URL, e.g. http://localhost:3000/webhooks/provider",
      httpUrl("http://localhost:3000/webhooks/provider"),
    )
    .option("--webhook-secret <secret>", "sign the events with this secret (with --webhook-url)")
    .option(
      "--state <file>",
      "keep orders and IDs in this SQLite file across restarts (default: in memory)",
    )
    .option(
      "--reset",
      "empty the sandbox's state file (the one `npm start` uses beside DATABASE_PATH, or --state) and exit; stop `npm start` first",
    )
    .action(
      async (opts: {
        port: number;
        clientId?: string;
        clientSecret?: string;
        stores: number[];
        rateLimit: number;
        windowMs: number;
        registrations: number;
        control?: boolean;
        state?: string;
        reset?: boolean;
        webhookUrl?: string;
        webhookSecret?: string;
      }) => {
        if ((opts.webhookUrl === undefined) !== (opts.webhookSecret === undefined)) {
          throw new ConfigError(
            "--webhook-url and --webhook-secret go together: the events are signed with the secret",
          );
        }
        if (opts.reset) {
          const path = opts.state ?? sandboxStatePath(config.env.DATABASE_PATH);
          const { SandboxFile } = await loadDevTool(
            "`connector sandbox`",
            () => import("@connector/provider-sandbox/sandbox-file.ts"),
          );
          const file = new SandboxFile(path);
          const { orders } = file.load();
          file.clear();
          file.close();
          console.log(`emptied ${path}: ${orders.length} orders removed, IDs start again`);
          return;
        }
        const sandbox = await (
          await loadDevTool("`connector sandbox`", () => import("@connector/provider-sandbox"))
        ).startSandbox({
          port: opts.port,
          stores: opts.stores,
          rateLimit: opts.rateLimit,
          windowMs: opts.windowMs,
          seedRegistrations: opts.registrations,
          ...(opts.control ? { control: true } : {}),
          ...(opts.state ? { statePath: opts.state } : {}),
          ...(opts.clientId ? { clientId: opts.clientId } : {}),
          ...(opts.clientSecret ? { clientSecret: opts.clientSecret } : {}),
          ...(opts.webhookUrl && opts.webhookSecret
            ? { webhooks: { url: opts.webhookUrl, secret: opts.webhookSecret } }
            : {}),
        });
        // The sandbox's own credentials are printed on purpose: it is a local development service.
        console.log(
          [
            "provider sandbox running",
            `  PROVIDER_BASE_URL=${sandbox.url}`,
            `  PROVIDER_AUTH_URL=${sandbox.authUrl}`,
            `  PROVIDER_AUDIENCE=${sandbox.audience}`,
            `  client id:     ${sandbox.clientId}`,
            `  client secret: ${sandbox.clientSecret}`,
            `  stores:        ${sandbox.stores.join(", ")}`,
            `  rate limit:    ${opts.rateLimit} per ${opts.windowMs} ms per store`,
            ...(opts.control ? [`  control:       ${sandbox.authUrl}/_sandbox/state`] : []),
            ...(opts.webhookUrl ? [`  webhooks to:   ${opts.webhookUrl}`] : []),
          ].join("\n"),
        );
        const stop = async () => {
          await sandbox.close();
          process.exit(0);
        };
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      },
    );
}
