import { Hono } from "hono";
import type { Logger } from "pino";
import type { ProviderEventIngest } from "../ingest/provider-event-ingest.ts";
import { withDeadline } from "../lib/deadline.ts";
import { errorResponse } from "../lib/http-errors.ts";
import { errorText } from "../lib/redact.ts";
import type { BodyBudget } from "./request-body.ts";
import { INGEST_DEADLINE_MS, webhookBody } from "./webhook-route.ts";

export interface ProviderWebhookRouteDeps {
  ingest: Pick<ProviderEventIngest, "receive">;
  logger: Logger;
  maxBytes: number;
  /** REQUEST_BODY_TIMEOUT_MS. */
  bodyTimeoutMs: number;
  /** REQUEST_BODIES_MAX_BYTES, the process's one budget. */
  bodies: BodyBudget;
  deadlineMs?: number;
  onOutcome?: (outcome: string) => void;
}

/**
 * POST /webhooks/provider: the provider's events (claims, shipping claims, registrations).
 * size (413), arrival (408) and the process's budget of arriving bodies (503) → headers and
 * signature of the raw bytes (400/401, nothing stored) → stored once per event ID and queued →
 * 200; 503 while the event cannot be made durable, so the provider retries. The body is never
 * logged: claims and registrations carry customer data.
 */
export function providerWebhookRoutes(deps: ProviderWebhookRouteDeps) {
  const app = new Hono();
  const body = webhookBody(deps.maxBytes, deps.bodyTimeoutMs, deps.bodies);
  app.post("/webhooks/provider", body, async (c) => {
    const bytes = new Uint8Array(await c.req.arrayBuffer());
    try {
      const result = await withDeadline(
        deps.ingest.receive(c.req.raw.headers, bytes),
        deps.deadlineMs ?? INGEST_DEADLINE_MS,
        "making the provider event durable",
      );
      if (!result.ok) {
        deps.onOutcome?.(`rejected:${result.code}`);
        deps.logger.warn(
          { code: result.code, storeId: result.storeId },
          "provider webhook refused",
        );
        return errorResponse(c, result.status, result.code, result.message, result.fields);
      }
      deps.onOutcome?.(result.outcome);
      if (deps.logger.isLevelEnabled("debug")) {
        deps.logger.debug(
          { eventId: result.eventId, topic: result.topic, storeId: result.storeId },
          `provider event ${result.outcome}`,
        );
      }
      return c.json({ ok: true, outcome: result.outcome });
    } catch (error) {
      deps.onOutcome?.("unavailable");
      deps.logger.error(
        { err: { message: errorText(error) } },
        "could not make the provider event durable; answering 503",
      );
      c.header("Retry-After", "5");
      return errorResponse(c, 503, "unavailable", "the event could not be stored; retry later");
    }
  });
  return app;
}
