import { createHmac, randomUUID } from "node:crypto";
import type { Command } from "commander";
import { ServiceLostError } from "../lib/outage.ts";
import { TOPICS } from "../shopify/topics.ts";
import { httpUrl, shopDomain, webhookTopic, wholeNumber } from "./arguments.ts";
import { refuse } from "./errors.ts";
import { readInputFile } from "./input-file.ts";
import { printable } from "./table.ts";

export interface SignedWebhook {
  headers: Record<string, string>;
  body: string;
}

/**
 * Builds a webhook exactly as Shopify sends one: the raw body signed with the app secret
 * (base64 HMAC-SHA256) and the X-Shopify-* headers. Used by the CLI, the tests and the benches.
 */
export function signWebhook(options: {
  topic: string;
  shop: string;
  body: string;
  secret: string;
  webhookId?: string;
  eventId?: string;
  apiVersion?: string;
  triggeredAt?: string;
}): SignedWebhook {
  const hmac = createHmac("sha256", options.secret).update(options.body, "utf8").digest("base64");
  return {
    body: options.body,
    headers: {
      "content-type": "application/json",
      "x-shopify-topic": options.topic,
      "x-shopify-hmac-sha256": hmac,
      "x-shopify-shop-domain": options.shop,
      "x-shopify-api-version": options.apiVersion ?? "2026-10",
      "x-shopify-webhook-id": options.webhookId ?? randomUUID(),
      "x-shopify-event-id": options.eventId ?? randomUUID(),
      "x-shopify-triggered-at": options.triggeredAt ?? new Date().toISOString(),
    },
  };
}

export function registerWebhookCommand(
  program: Command,
  defaults: {
    url: string;
    secret: string;
    /** Whether SHOPIFY_API_SECRET is set (else the development secret signs). */
    secretSet: boolean;
  },
) {
  program
    .command("webhook")
    .description("work with Shopify webhooks")
    .command("send")
    .description("sign a payload with the app secret and send it to the receiver")
    .requiredOption(
      "--topic <topic>",
      "webhook topic, e.g. orders/create (one the connector handles)",
      webhookTopic,
    )
    .requiredOption("--shop <domain>", "shop domain, e.g. demo-shop.myshopify.com", shopDomain)
    .requiredOption("--file <path>", "JSON payload file")
    .option(
      "--url <url>",
      "receiver URL",
      httpUrl("http://localhost:3000/webhooks/shopify"),
      defaults.url,
    )
    .option(
      "--times <n>",
      "deliver the same webhook n times (same webhook id: Shopify's retries)",
      wholeNumber({ min: 1, max: 1000 }),
      1,
    )
    .action(
      async (opts: { topic: string; shop: string; file: string; url: string; times: number }) => {
        const body = readInputFile(opts.file);
        const signed = signWebhook({
          topic: opts.topic,
          shop: opts.shop,
          body,
          secret: defaults.secret,
        });
        for (let i = 0; i < opts.times; i++) {
          const { response, answer } = await deliver(opts.url, signed.headers, body);
          console.log(`${response.status} ${answer}`);
          if (!response.ok) {
            refuse(refusedBecause(response.status, answer, opts.url, defaults.secretSet), 1);
            continue;
          }
          // Shopify gets a 200 for these (retrying would not help), but whoever sent the webhook
          // by hand must know that nothing was queued, and why.
          const dropped = droppedBecause(outcomeOf(answer), opts);
          if (dropped) {
            refuse(dropped, 1);
            return;
          }
        }
      },
    );
}

/**
 * How long the receiver has to answer one delivery: it answers within its own deadline (2 s,
 * Shopify allows 5 s), so a receiver that takes this long is stopped or cut off, not busy.
 */
const RECEIVER_ANSWER_MS = 10_000;

/** One POST and its answer's text, bounded: a receiver that holds it is named in one line. */
async function deliver(
  url: string,
  headers: Record<string, string>,
  body: string,
): Promise<{ response: Response; answer: string }> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers,
      body,
      signal: AbortSignal.timeout(RECEIVER_ANSWER_MS),
    });
    return { response, answer: await response.text() };
  } catch (error) {
    if ((error as Error).name !== "TimeoutError") throw error;
    throw new ServiceLostError(
      `the receiver at ${url} did not answer within ${RECEIVER_ANSWER_MS / 1000} s (it answers in 2 s, Shopify waits 5): check that the connector there is running and reachable (its /healthz), or the command's --url`,
    );
  }
}

function outcomeOf(answer: string): unknown {
  try {
    return (JSON.parse(answer) as { outcome?: unknown }).outcome;
  } catch {
    return undefined;
  }
}

/** The receiver's refusal (not 2xx) in one line: its cause and what to do. */
function refusedBecause(status: number, answer: string, url: string, secretSet: boolean): string {
  let error: { code?: string; message?: string } = {};
  try {
    error = (JSON.parse(answer) as { error?: typeof error }).error ?? {};
  } catch {
    // Not the receiver's JSON (a proxy's page): said by its status alone.
  }
  const said = `${status}${error.code ? ` ${error.code}` : ""}`;
  if (status === 401) {
    return `the receiver at ${url} refused the webhook's signature (${said}): this command signs with SHOPIFY_API_SECRET${secretSet ? "" : ", which is not set here (the development secret signed it)"}; set it to the app secret the receiver uses`;
  }
  if (status === 503) {
    return `the receiver at ${url} could not store the webhook (${said}): its Redis or database is away (its /readyz and \`npx connector status\` say which); Shopify sends a webhook answered 503 again, so send it again once it is back`;
  }
  if (status === 413) {
    return `the receiver at ${url} refused the body as too large (${said}): it takes up to WEBHOOK_MAX_BYTES (1 MB unless set)`;
  }
  return `the receiver at ${url} refused the webhook (${said}${error.message ? `: ${printable(error.message)}` : ""})`;
}

/** Why the receiver queued nothing for a webhook it answered 200, or null when it queued it. */
function droppedBecause(
  outcome: unknown,
  sent: { topic: string; shop: string; url: string },
): string | null {
  switch (outcome) {
    case "unknown-shop":
      return notInstalled(sent.shop, sent.url);
    case "dead-lettered":
      return `the receiver dead-lettered the webhook, as its body could not be used: \`npx connector dlq list --shop ${sent.shop}\` says why`;
    case "ignored":
      return `the receiver ignored the webhook: the connector does not handle the topic ${sent.topic} (it handles ${Object.keys(TOPICS).join(", ")})`;
    default:
      return null;
  }
}

/** The receiver dropped the webhook: the shop is not installed here, or not active. */
export function notInstalled(shop: string, receiverUrl: string): string {
  const install = new URL(`/shopify/install?shop=${encodeURIComponent(shop)}`, receiverUrl);
  return (
    `shop ${shop} is not installed (or is paused or uninstalled), so the receiver dropped the webhook: ` +
    `install the app on it (open ${install.href}) or register it with \`npx connector shops add --shop ${shop} …\`; ` +
    "`npx connector shops list` shows the shops and their status"
  );
}
