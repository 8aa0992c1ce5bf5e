import { type Command, InvalidArgumentError } from "commander";
import { loadDevTool } from "../lib/dev-tools.ts";

const int = (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError("must be a whole number");
  return n;
};

/**
 * `connector shopify-standin`: the stand-in Shopify (OAuth authorize and token, Admin GraphQL,
 * webhook subscriptions and delivery) for installing the app locally without a Shopify store.
 */
export function registerShopifyStandInCommand(program: Command) {
  program
    .command("shopify-standin")
    .description("run the stand-in Shopify locally: OAuth install, Admin GraphQL, webhooks")
    .option("--port <port>", "port (0 = a free one)", int, 4000)
    .option(
      "--token-ttl <seconds>",
      "life of an expiring offline access token (expires_in)",
      int,
      3600,
    )
    .option("--api-key <key>", "the app's client ID (SHOPIFY_API_KEY)", "dev-shopify-api-key")
    .option(
      "--api-secret <secret>",
      "the app's client secret (SHOPIFY_API_SECRET): signs callbacks and webhooks",
      "dev-shopify-api-secret",
    )
    .action(async (opts: { port: number; apiKey: string; apiSecret: string; tokenTtl: number }) => {
      const standIn = await (
        await loadDevTool("connector shopify-standin", () => import("../sandbox/shopify/index.ts"))
      ).startShopifyStandIn({
        port: opts.port,
        apiKey: opts.apiKey,
        apiSecret: opts.apiSecret,
        tokenTtlSeconds: opts.tokenTtl,
      });
      console.log(
        [
          "stand-in Shopify running",
          `  SHOPIFY_ADMIN_URL=${standIn.url}`,
          "  start the connector with that variable, then open",
          "  $APP_URL/shopify/install?shop=any-name.myshopify.com",
        ].join("\n"),
      );
      const stop = async () => {
        await standIn.close();
        process.exit(0);
      };
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    });
}
