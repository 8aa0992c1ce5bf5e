import type { Command } from "commander";
import { loadDevTool } from "../lib/dev-tools.ts";
import { httpUrl, wholeNumber } from "./arguments.ts";

/**
 * `connector shopify-standin`: the stand-in Shopify (OAuth authorize and token, Admin GraphQL,
 * webhook subscriptions and delivery) for installing the app locally without a Shopify store.
 */
export function registerShopifyStandInCommand(program: Command) {
  program
    .command("shopify-standin")
    .description("run the stand-in Shopify locally: OAuth install, Admin GraphQL, webhooks")
    .option("--port <port>", "port (0 = a free one)", wholeNumber({ min: 0, max: 65535 }), 4000)
    .option(
      "--token-ttl <seconds>",
      "life of an expiring offline access token (expires_in)",
      wholeNumber({ min: 1 }),
      3600,
    )
    .option("--api-key <key>", "the app's client ID (SHOPIFY_API_KEY)", "dev-shopify-api-key")
    .option(
      "--api-secret <secret>",
      "the app's client secret (SHOPIFY_API_SECRET): signs callbacks and webhooks",
      "dev-shopify-api-secret",
    )
    .option(
      "--app-url <url>",
      "the app's URL (APP_URL): the stand-in admin frames it",
      httpUrl("http://localhost:3000"),
      process.env.APP_URL ?? `http://localhost:${process.env.PORT ?? 3000}`,
    )
    .option(
      "--app-toml <file>",
      "deliver the app-specific subscriptions of this shopify.app.toml (run the connector with SHOPIFY_WEBHOOKS=app)",
    )
    .action(
      async (opts: {
        appToml?: string;
        port: number;
        apiKey: string;
        apiSecret: string;
        tokenTtl: number;
        appUrl: string;
      }) => {
        const tools = await loadDevTool(
          "`connector shopify-standin`",
          () => import("@connector/shopify-standin"),
        );
        const standIn = await tools.startShopifyStandIn({
          ...(opts.appToml
            ? { appSubscriptions: tools.appSubscriptionsFromToml(opts.appToml, opts.appUrl) }
            : {}),
          port: opts.port,
          apiKey: opts.apiKey,
          apiSecret: opts.apiSecret,
          tokenTtlSeconds: opts.tokenTtl,
          appUrl: opts.appUrl,
        });
        console.log(
          [
            "stand-in Shopify running",
            `  SHOPIFY_ADMIN_URL=${standIn.url}`,
            "  start the connector with that variable, then open the app inside the stand-in admin",
            `  ${standIn.url.replace("127.0.0.1", "localhost")}/store/any-name/apps/order-sync`,
            "  or install it outside the admin (OAuth):",
            `  ${opts.appUrl}/shopify/install?shop=any-name.myshopify.com`,
          ].join("\n"),
        );
        const stop = async () => {
          await standIn.close();
          process.exit(0);
        };
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      },
    );
}
