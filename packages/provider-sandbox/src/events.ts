import { createHmac, randomUUID } from "node:crypto";
import { Hono } from "hono";
import { z } from "zod";
import type { SandboxState } from "./app.ts";
import type { StoredRegistration } from "./registrations.ts";

/**
 * The provider's outbound webhooks, as the sandbox sends them (the connector's
 * docs/provider-contract.md, "Events"): a POST of the resource itself (a Claim, a shipping
 * claim, a Registration) with `X-Webhook-Id` (the same on every retry of one event),
 * `X-Webhook-Topic`, `X-Api-Version`, `X-Store-Id`, `X-Webhook-Timestamp` (Unix seconds, fresh on
 * each attempt) and `X-Webhook-Signature: sha256=<hex HMAC-SHA256 of the raw body>` with the
 * subscriber's secret. A delivery that is not answered 2xx is retried with exponential backoff.
 */

export interface WebhookSubscriber {
  url: string;
  secret: string;
  /** Attempts per event, the first included (default 4). */
  maxAttempts: number;
  /** The wait before the second attempt; doubled for each next one (default 1000 ms). */
  backoffMs: number;
}

export type SignatureMode = "valid" | "bad" | "none";

export interface DeliveryOptions {
  /** `bad`: signed with another secret; `none`: no signature header. */
  signature?: SignatureMode;
  /** The timestamp header as sent (e.g. a stale one); now, in Unix seconds, otherwise. */
  timestamp?: string;
  /** Retry when not answered 2xx (default true). */
  retry?: boolean;
  /** Record the event but send it only on `POST /_sandbox/webhooks/release` (a late delivery). */
  hold?: boolean;
}

export interface DeliveryAttempt {
  at: string;
  status: number | "error";
  /** The subscriber's answer (its first 500 characters). */
  answer: string;
}

export interface DeliveryRecord {
  webhookId: string;
  topic: string;
  storeId: number;
  body: string;
  options: DeliveryOptions;
  attempts: DeliveryAttempt[];
  state: "held" | "sending" | "delivered" | "failed";
}

export interface SandboxClaim {
  claimId: number;
  storeId: number;
  externalId: string;
  resolutionSummary: { giftCards: { giftCardId: number }[] };
  kind: "claim" | "shipping_claim";
  status: string;
  orderId: number | null;
  sourceOrderId: string | null;
  orderName: string | null;
  createdOn: string;
  updatedOn: string;
}

export const SANDBOX_API_VERSION = "v1";

/** The first answer a control call reports: the subscriber's status and body. */
export interface FirstAnswer {
  webhookId: string;
  topic: string;
  state: DeliveryRecord["state"];
  status: number | "error" | null;
  answer: string | null;
}

export class EventSender {
  subscriber: WebhookSubscriber | null = null;
  readonly deliveries: DeliveryRecord[] = [];
  readonly claims = new Map<number, SandboxClaim>();
  #nextClaim = 5001;
  #nextRegistration = 1;
  readonly #timers = new Set<NodeJS.Timeout>();
  #stopped = false;

  constructor(private readonly fetchImpl: typeof fetch = fetch) {}

  configure(subscriber: WebhookSubscriber): void {
    this.subscriber = subscriber;
  }

  nextClaimId(): number {
    return this.#nextClaim++;
  }

  nextRegistrationNumber(): number {
    return this.#nextRegistration++;
  }

  /** Records an event and sends it (unless held); answers with the first attempt's result. */
  async send(
    topic: string,
    storeId: number,
    body: unknown,
    options: DeliveryOptions = {},
    webhookId: string = randomUUID(),
  ): Promise<FirstAnswer> {
    const record: DeliveryRecord = {
      webhookId,
      topic,
      storeId,
      body: typeof body === "string" ? body : JSON.stringify(body),
      options,
      attempts: [],
      state: options.hold ? "held" : "sending",
    };
    this.deliveries.push(record);
    if (options.hold) return answerOf(record);
    await this.#attempt(record);
    return answerOf(record);
  }

  /** Sends a held event now (it arrives after the ones sent since). */
  async release(webhookId: string): Promise<FirstAnswer | null> {
    const record = this.deliveries.find((d) => d.webhookId === webhookId && d.state === "held");
    if (!record) return null;
    record.state = "sending";
    await this.#attempt(record);
    return answerOf(record);
  }

  /** The same event again (same ID and body), freshly signed: what a provider's retry looks like. */
  async replay(webhookId: string, options: DeliveryOptions = {}): Promise<FirstAnswer | null> {
    const original = this.deliveries.find((d) => d.webhookId === webhookId);
    if (!original) return null;
    return this.send(original.topic, original.storeId, original.body, options, webhookId);
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  headersFor(record: DeliveryRecord, secret: string): Record<string, string> {
    const timestamp = record.options.timestamp ?? String(Math.floor(Date.now() / 1000));
    const mode = record.options.signature ?? "valid";
    const signingSecret = mode === "bad" ? `${secret}-not-the-subscribers` : secret;
    return {
      "content-type": "application/json",
      "x-webhook-id": record.webhookId,
      "x-webhook-topic": record.topic,
      "x-api-version": SANDBOX_API_VERSION,
      "x-store-id": String(record.storeId),
      "x-webhook-timestamp": timestamp,
      ...(mode === "none"
        ? {}
        : {
            "x-webhook-signature": `sha256=${createHmac("sha256", signingSecret).update(record.body).digest("hex")}`,
          }),
    };
  }

  async #attempt(record: DeliveryRecord): Promise<void> {
    const subscriber = this.subscriber;
    if (!subscriber) {
      record.state = "failed";
      record.attempts.push({
        at: new Date().toISOString(),
        status: "error",
        answer: "no subscriber configured (PUT /_sandbox/webhooks)",
      });
      return;
    }
    let status: number | "error";
    let answer: string;
    try {
      const response = await this.fetchImpl(subscriber.url, {
        method: "POST",
        headers: this.headersFor(record, subscriber.secret),
        body: record.body,
        signal: AbortSignal.timeout(10_000),
      });
      status = response.status;
      answer = (await response.text()).slice(0, 500);
    } catch (error) {
      status = "error";
      answer = (error as Error).message;
    }
    record.attempts.push({ at: new Date().toISOString(), status, answer });
    if (typeof status === "number" && status >= 200 && status < 300) {
      record.state = "delivered";
      return;
    }
    const retry = record.options.retry ?? true;
    if (!retry || this.#stopped || record.attempts.length >= subscriber.maxAttempts) {
      record.state = "failed";
      return;
    }
    const wait = subscriber.backoffMs * 2 ** (record.attempts.length - 1);
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      void this.#attempt(record);
    }, wait);
    timer.unref();
    this.#timers.add(timer);
  }
}

function answerOf(record: DeliveryRecord): FirstAnswer {
  const first = record.attempts[0];
  return {
    webhookId: record.webhookId,
    topic: record.topic,
    state: record.state,
    status: first?.status ?? null,
    answer: first?.answer ?? null,
  };
}

/** The Claim resource as sent (2.11's opening fields, then the ones we chose). */
export function claimView(claim: SandboxClaim) {
  return {
    storeId: claim.storeId,
    claimId: claim.claimId,
    externalId: claim.externalId,
    resolutionSummary: claim.resolutionSummary,
    status: claim.status,
    orderId: claim.orderId,
    sourceOrderId: claim.sourceOrderId,
    orderName: claim.orderName,
    createdOn: claim.createdOn,
    updatedOn: claim.updatedOn,
  };
}

const Delivery = z
  .strictObject({
    signature: z.enum(["valid", "bad", "none"]).optional(),
    timestamp: z.string().min(1).max(64).optional(),
    retry: z.boolean().optional(),
    hold: z.boolean().optional(),
  })
  .optional();
const Subscriber = z.strictObject({
  url: z.url(),
  secret: z.string().min(1),
  maxAttempts: z.number().int().min(1).max(10).optional(),
  backoffMs: z.number().int().min(0).max(60_000).optional(),
});
const Status = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,39}$/, "a lower-case word such as open, approved, closed");
const OpenClaim = z.strictObject({
  storeId: z.number().int().positive().optional(),
  kind: z.enum(["claim", "shipping_claim"]).optional(),
  orderId: z.number().int().positive().optional(),
  sourceOrderId: z.string().min(1).optional(),
  orderName: z.string().min(1).optional(),
  externalId: z.string().min(1).optional(),
  status: Status.optional(),
  delivery: Delivery,
});
const ChangeClaim = z.strictObject({
  status: Status,
  delivery: Delivery,
});
const AddRegistration = z.strictObject({
  storeId: z.number().int().positive().optional(),
  externalId: z.string().min(1).optional(),
  customerEmail: z.email().optional(),
  customerName: z.string().min(1).optional(),
  channelName: z.string().min(1).optional(),
  sku: z.string().min(1).optional(),
  delivery: Delivery,
});
const RawEvent = z.strictObject({
  topic: z.string().min(1),
  storeId: z.number().int().positive().optional(),
  body: z.unknown(),
  delivery: Delivery,
});
const ByWebhookId = z.strictObject({ webhookId: z.string().min(1), delivery: Delivery });

/**
 * `/_sandbox/…` for the provider's events: set the subscriber (`PUT /webhooks`: URL and
 * secret), open a claim (`POST /claims`), change its status (`POST /claims/{id}`), add a
 * registration and announce it (`POST /webhooks/registrations`), send any raw event
 * (`POST /webhooks/send`), replay or release a delivery (`POST /webhooks/replay|release`), and
 * list what was delivered (`GET /webhooks/deliveries`). Each sending call answers with the
 * subscriber's first answer.
 */
export function eventControlRoutes(state: SandboxState, sender: EventSender, stores: number[]) {
  const app = new Hono();
  const defaultStore = stores[0] ?? 1001;
  const parse = async <T>(c: { req: { json(): Promise<unknown> } }, schema: z.ZodType<T>) =>
    schema.safeParse(await c.req.json().catch(() => null));

  app.put("/webhooks", async (c) => {
    const parsed = await parse(c, Subscriber);
    if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
    sender.configure({
      url: parsed.data.url,
      secret: parsed.data.secret,
      maxAttempts: parsed.data.maxAttempts ?? 4,
      backoffMs: parsed.data.backoffMs ?? 1_000,
    });
    return c.json({ ok: true });
  });

  app.get("/webhooks/deliveries", (c) => c.json({ deliveries: sender.deliveries }));

  app.post("/claims", async (c) => {
    const parsed = await parse(c, OpenClaim);
    if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
    const input = parsed.data;
    const storeId = input.storeId ?? defaultStore;
    const order =
      input.orderId !== undefined
        ? state.orders.all.find((o) => o.orderId === input.orderId && o.storeId === storeId)
        : undefined;
    if (input.orderId !== undefined && !order) {
      return c.json({ error: `store ${storeId} has no order ${input.orderId}` }, 404);
    }
    const now = new Date().toISOString();
    const claimId = sender.nextClaimId();
    const claim: SandboxClaim = {
      claimId,
      storeId,
      externalId: input.externalId ?? `CLM-${claimId}`,
      resolutionSummary: { giftCards: [] },
      kind: input.kind ?? "claim",
      status: input.status ?? "open",
      orderId: order?.orderId ?? null,
      sourceOrderId: input.sourceOrderId ?? order?.sourceOrderId ?? null,
      orderName: input.orderName ?? order?.orderName ?? null,
      createdOn: now,
      updatedOn: now,
    };
    sender.claims.set(claimId, claim);
    const delivery = await sender.send(
      `${claim.kind}/created`,
      storeId,
      claimView(claim),
      input.delivery,
    );
    return c.json({ claim: claimView(claim), delivery }, 201);
  });

  app.post("/claims/:claimId", async (c) => {
    const claim = sender.claims.get(Number(c.req.param("claimId")));
    if (!claim) return c.json({ error: "no such claim" }, 404);
    const parsed = await parse(c, ChangeClaim);
    if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
    claim.status = parsed.data.status;
    // Strictly later than the previous change, even within one millisecond.
    claim.updatedOn = new Date(Math.max(Date.now(), Date.parse(claim.updatedOn) + 1)).toISOString();
    const action = claim.status === "closed" ? "closed" : "updated";
    const delivery = await sender.send(
      `${claim.kind}/${action}`,
      claim.storeId,
      claimView(claim),
      parsed.data.delivery,
    );
    return c.json({ claim: claimView(claim), delivery });
  });

  // Under /webhooks: POST /_sandbox/registrations (adding registrations without an event) is
  // the registrations tooling's.
  app.post("/webhooks/registrations", async (c) => {
    const parsed = await parse(c, AddRegistration);
    if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
    const input = parsed.data;
    const storeId = input.storeId ?? defaultStore;
    const n = sender.nextRegistrationNumber();
    // Above the seeded registrations' IDs (storeId * 100000 + index).
    const registrationId = storeId * 100_000 + 90_000 + n;
    const now = new Date().toISOString();
    const registration: StoredRegistration & { updatedOn: string } = {
      registrationId,
      storeId,
      externalId: input.externalId ?? `REG-${storeId}-E${n}`,
      customerEmail: input.customerEmail ?? `registrant${n}@example.com`,
      customerName: input.customerName ?? `Registrant ${n}`,
      channelName: input.channelName ?? "web",
      emailMarketingConsent: false,
      lineItems: [
        {
          lineItemId: registrationId,
          sourceLineItemId: `reg-line-${n}`,
          sku: input.sku ?? "SKU-1",
          name: "Registered product",
          quantity: 1,
        },
      ],
      claims: [],
      createdOn: now,
      updatedOn: now,
    };
    state.registrations.push(registration);
    const delivery = await sender.send(
      "registration/created",
      storeId,
      registration,
      input.delivery,
    );
    return c.json({ registration, delivery }, 201);
  });

  app.post("/webhooks/send", async (c) => {
    const parsed = await parse(c, RawEvent);
    if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
    const { topic, storeId, body, delivery } = parsed.data;
    return c.json({
      delivery: await sender.send(topic, storeId ?? defaultStore, body ?? {}, delivery),
    });
  });

  app.post("/webhooks/replay", async (c) => {
    const parsed = await parse(c, ByWebhookId);
    if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
    const delivery = await sender.replay(parsed.data.webhookId, parsed.data.delivery);
    if (!delivery) return c.json({ error: "no such delivery" }, 404);
    return c.json({ delivery });
  });

  app.post("/webhooks/release", async (c) => {
    const parsed = await parse(c, ByWebhookId);
    if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
    const delivery = await sender.release(parsed.data.webhookId);
    if (!delivery) return c.json({ error: "no held delivery with that ID" }, 404);
    return c.json({ delivery });
  });

  return app;
}
