import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { Logger } from "pino";
import type { WebhookIngest } from "../queue/webhook-ingest.ts";
import type { Shopify } from "../shopify/api.ts";
import { normalizeTopic } from "../shopify/index.ts";
import { ShopDomain } from "../sync/source-order.ts";
import { errorResponse } from "./errors.ts";

export interface WebhookRouteDeps {
  shopify: Shopify;
  ingest: WebhookIngest;
  logger: Logger;
  maxBytes: number;
  onOutcome?: (topic: string, outcome: string) => void;
}

/**
 * POST /webhooks/shopify. The order of checks decides what Shopify does next (STYLE.md item 6):
 * size (413) → HMAC of the raw bytes (401, nothing stored) → durable ingest → 200; 503 when the
 * event could not be made durable, so Shopify retries; never 200 for an event not stored.
 */
export function webhookRoutes(deps: WebhookRouteDeps) {
  const { shopify, ingest, logger } = deps;
  const app = new Hono();
  app.post(
    "/webhooks/shopify",
    bodyLimit({
      maxSize: deps.maxBytes,
      onError: (c) =>
        errorResponse(
          c,
          413,
          "payload_too_large",
          `webhook bodies are limited to ${deps.maxBytes} bytes`,
        ),
    }),
    async (c) => {
      const rawBody = await c.req.text();
      const check = await shopify.webhooks.validate({ rawBody, rawRequest: c.req.raw });
      if (!check.valid) {
        deps.onOutcome?.("unknown", `rejected:${check.reason}`);
        if (check.reason === "missing_headers") {
          return errorResponse(
            c,
            400,
            "missing_headers",
            "required Shopify webhook headers are missing",
            ("missingHeaders" in check ? (check.missingHeaders as string[]) : []).map((h) => ({
              path: `headers.${h}`,
              message: "required",
            })),
          );
        }
        return errorResponse(c, 401, check.reason, "webhook signature is missing or invalid");
      }
      const topic = normalizeTopic(check.topic);
      const shop = ShopDomain.safeParse(check.domain.toLowerCase());
      if (!shop.success) {
        deps.onOutcome?.(topic, "rejected:bad_shop");
        return errorResponse(
          c,
          400,
          "invalid_shop",
          "X-Shopify-Shop-Domain is not a myshopify.com domain",
          [
            {
              path: "headers.x-shopify-shop-domain",
              message: shop.error.issues[0]?.message ?? "invalid",
            },
          ],
        );
      }
      // A child logger only when something is logged: it costs more than the rest of a request.
      const log = () => logger.child({ shop: shop.data, topic, webhookId: check.webhookId });
      try {
        const outcome = await ingest.ingest({
          shop: shop.data,
          topic,
          webhookId: check.webhookId,
          eventId: "eventId" in check && typeof check.eventId === "string" ? check.eventId : null,
          triggeredAt:
            "triggeredAt" in check && typeof check.triggeredAt === "string"
              ? check.triggeredAt
              : null,
          rawBody,
        });
        deps.onOutcome?.(topic, outcome);
        if (outcome === "unknown-shop")
          log().warn("webhook for a shop that is not installed or active");
        else if (outcome === "dead-lettered") log().warn("webhook body unusable; dead-lettered");
        else if (logger.isLevelEnabled("debug")) log().debug({ outcome }, "webhook ingested");
        return c.json({ ok: true, outcome });
      } catch (error) {
        deps.onOutcome?.(topic, "unavailable");
        log().error(
          { err: { message: (error as Error).message } },
          "could not make the webhook durable; answering 503",
        );
        c.header("Retry-After", "5");
        return errorResponse(c, 503, "unavailable", "the event could not be stored; retry later");
      }
    },
  );
  return app;
}
