import { Hono } from "hono";
import type { Logger } from "pino";
import { LIFECYCLE_WINDOW_MS, type WebhookIngest } from "../ingest/webhook-ingest.ts";
import { withDeadline } from "../lib/deadline.ts";
import { type FailureCause, type FailureDigest, lineLevel } from "../lib/failure-digest.ts";
import { errorResponse } from "../lib/http-errors.ts";
import { errorText } from "../lib/redact.ts";
import { annotate, CONNECTOR, inSpan, inSpanSync } from "../lib/tracing.ts";
import {
  isTopic,
  normalizeTopic,
  ShopMismatchError,
  TopicMismatchError,
  verifyShopifyWebhook,
} from "../shopify/index.ts";
import { ShopDomainInput } from "../sync/source-order.ts";
import { type BodyBudget, readBodyFirst } from "./request-body.ts";
import { traceRequest } from "./trace-request.ts";

export interface WebhookRouteDeps {
  /** The app's client secret: Shopify signs every webhook with it. */
  secret: string;
  ingest: WebhookIngest;
  logger: Logger;
  maxBytes: number;
  /** REQUEST_BODY_TIMEOUT_MS: a body not whole this long after the headers is answered 408. */
  bodyTimeoutMs: number;
  /** The process's REQUEST_BODIES_MAX_BYTES, shared with every body read before its sender is known. */
  bodies: BodyBudget;
  /** Default INGEST_DEADLINE_MS. */
  deadlineMs?: number;
  onOutcome?: (topic: string, outcome: string) => void;
  /**
   * Collapses a refusal that repeats (a shop's webhooks dropped while it is not installed or
   * active, 503s while Redis is away) into a line when it starts, a summary a minute and a line
   * when it ends; each webhook's own line is then at debug.
   */
  failures?: FailureDigest;
}

const decoder = new TextDecoder();

/** A shop's webhooks dropped while it is not installed or active, as the digest counts them. */
function droppedFor(shop: string): FailureCause {
  return {
    shop,
    signature: "unknown-shop",
    wording: {
      subject: `webhooks for ${shop}`,
      still: "still dropped",
      unit: "webhooks",
      field: "webhooksDropped",
      level: "warn",
      through: "one of its webhooks was queued",
      after: "the shop is not installed or active (`connector shops list`)",
    },
  };
}

/** Webhooks answered 503 for one cause (every shop's), as the digest counts them. */
const REFUSED: FailureCause = {
  shop: "",
  // One cause whatever the words (a refused connection, the deadline): Redis's own outage line
  // names it; the last message is in the summaries.
  signature: "unavailable",
  wording: {
    subject: "webhooks",
    still: "still answered 503",
    unit: "webhooks",
    field: "webhooksRefused",
    level: "error",
    through: "a webhook was stored",
    after: "Shopify sends each of them again later",
  },
};

/**
 * A webhook body's bounds, Shopify's and the provider's: over WEBHOOK_MAX_BYTES 413, not whole
 * within REQUEST_BODY_TIMEOUT_MS 408, past the process's REQUEST_BODIES_MAX_BYTES 503
 * (src/server/request-body.ts).
 */
export function webhookBody(maxBytes: number, arrivalMs: number, budget: BodyBudget) {
  return readBodyFirst({
    maxBytes,
    arrivalMs,
    budget,
    tooLarge: (c) =>
      errorResponse(c, 413, "payload_too_large", `webhook bodies are limited to ${maxBytes} bytes`),
  });
}

/**
 * How long a webhook may wait for Redis before it is answered 503 (Shopify allows 5 s). One
 * timer per webhook covers every command of it, including a Redis that keeps the port open and
 * answers nothing; work still under way then may complete later, which a retry then finds.
 */
export const INGEST_DEADLINE_MS = 2_000;

/**
 * POST /webhooks/shopify. The order of checks decides what Shopify does next (docs/principles.md:
 * the webhook path reads the raw bytes first): size (413), arrival (408) and the process's
 * budget of arriving bodies (503) → HMAC of the raw bytes (401, nothing stored) → durable
 * ingest → 200; 503 when the event could not be made durable, so Shopify retries; never 200
 * for an event not stored.
 */
export function webhookRoutes(deps: WebhookRouteDeps) {
  const { secret, ingest, logger } = deps;
  const app = new Hono();
  const route = "/webhooks/shopify";
  const body = webhookBody(deps.maxBytes, deps.bodyTimeoutMs, deps.bodies);
  app.post(route, traceRequest(route), body, async (c) => {
    // The HMAC covers the bytes as sent: verify those, then decode (never re-serialize).
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    const check = inSpanSync("verify webhook", {}, () =>
      verifyShopifyWebhook(c.req.raw.headers, bytes, secret),
    );
    if (!check.valid) {
      deps.onOutcome?.("unknown", `rejected:${check.reason}`);
      if (check.reason === "conflicting_headers") {
        return errorResponse(
          c,
          400,
          "conflicting_headers",
          "a Shopify webhook header was sent more than once, with different values",
          check.conflictingHeaders.map((h) => ({
            path: `headers.${h.toLowerCase()}`,
            message: "sent more than once, with different values",
          })),
        );
      }
      if (check.reason === "missing_headers") {
        return errorResponse(
          c,
          400,
          "missing_headers",
          "required Shopify webhook headers are missing",
          check.missingHeaders.map((h) => ({
            path: `headers.${h.toLowerCase()}`,
            message: "required",
          })),
        );
      }
      return errorResponse(c, 401, check.reason, "webhook signature is missing or invalid");
    }
    const topic = normalizeTopic(check.topic);
    const shop = ShopDomainInput.safeParse(check.domain);
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
    annotate({ [CONNECTOR.shop]: shop.data, [CONNECTOR.topic]: topic.slice(0, 64) });
    // A child logger only when something is logged: it costs more than the rest of a request.
    // The topic header is the sender's text: an unknown one is logged cut short.
    const log = () =>
      logger.child({
        shop: shop.data,
        topic: isTopic(topic) ? topic : topic.slice(0, 64),
        webhookId: check.webhookId.slice(0, 64),
      });
    try {
      const outcome = await withDeadline(
        inSpan("ingest webhook", {}, async (span) => {
          const outcome = await ingest.ingest({
            shop: shop.data,
            topic,
            webhookId: check.webhookId,
            eventId: check.eventId,
            triggeredAt: check.triggeredAt,
            rawBody: decoder.decode(bytes),
          });
          span.setAttribute(CONNECTOR.outcome, outcome);
          return outcome;
        }),
        deps.deadlineMs ?? INGEST_DEADLINE_MS,
        "making the webhook durable",
      );
      deps.onOutcome?.(topic, outcome);
      // A webhook made durable: a 503 cause of every shop, and this shop's refusal, have ended.
      if (outcome !== "unknown-shop") deps.failures?.succeeded(shop.data, false);
      if (outcome === "unknown-shop") {
        // One line when a shop's webhooks start being dropped; the next ones are counted.
        const level = lineLevel(deps.failures, droppedFor(shop.data), "not installed or active");
        log()[level]("webhook for a shop that is not installed or active");
      } else if (outcome === "refused-installed" && topic === "shop/redact")
        log().warn(
          "shop/redact refused: the shop is installed (Shopify sends it only after an uninstall)",
        );
      else if (outcome === "refused-stale")
        log().warn(
          { triggeredAt: check.triggeredAt },
          `lifecycle or privacy webhook refused: triggered more than ${LIFECYCLE_WINDOW_MS / 3_600_000} hours ago, or with no X-Shopify-Triggered-At (a replay); if Shopify really sent it that late, act on it by hand`,
        );
      else if (outcome === "dead-lettered") log().warn("webhook body unusable; dead-lettered");
      else if (logger.isLevelEnabled("debug")) log().debug({ outcome }, "webhook ingested");
      return c.json({ ok: true, outcome });
    } catch (error) {
      if (error instanceof TopicMismatchError) {
        deps.onOutcome?.(topic, "rejected:topic_mismatch");
        log().warn(
          { field: error.field },
          "signed body does not fit its topic header (a delivery replayed under another topic); refused",
        );
        return errorResponse(
          c,
          400,
          "topic_mismatch",
          `the body is not a ${error.topic} body: ${error.field}: ${error.problem}`,
          [{ path: `body.${error.field}`, message: error.problem }],
        );
      }
      if (error instanceof ShopMismatchError) {
        deps.onOutcome?.(topic, "rejected:shop_mismatch");
        log().warn(
          { field: error.field },
          "signed body names another shop than its header; refused",
        );
        return errorResponse(c, 400, "shop_mismatch", error.message, [
          { path: `body.${error.field}`, message: "must be X-Shopify-Shop-Domain's shop" },
        ]);
      }
      deps.onOutcome?.(topic, "unavailable");
      const message = errorText(error);
      // One line when webhooks start being refused (Redis away); the next ones are counted.
      log()[lineLevel(deps.failures, REFUSED, message)](
        { err: { message } },
        "could not make the webhook durable; answering 503",
      );
      c.header("Retry-After", "5");
      return errorResponse(c, 503, "unavailable", "the event could not be stored; retry later");
    }
  });
  return app;
}
