import { randomUUID } from "node:crypto";
import type { SandboxHandle } from "@connector/provider-sandbox";
import { Redis } from "ioredis";
import { onTestFinished } from "vitest";
import { createSecretBox } from "../../src/lib/secret-box.ts";
import {
  type OrderCreate,
  ProviderClient,
  type ProviderClientOptions,
} from "../../src/provider/index.ts";
import { service } from "./services.ts";

/** A client for the sandbox with its own Redis key prefix (token cache isolation per test). */
/** One key for every client of a test run: clients share the sealed token through Redis. */
const FIXTURE_SECRETS = createSecretBox(Buffer.alloc(32, 5).toString("base64"));

export function clientFor(
  sandbox: SandboxHandle,
  options: {
    prefix?: string;
    redis?: Redis;
    fetch?: typeof fetch;
    clientId?: string;
    clientSecret?: string;
    timeoutMs?: number;
    onResponse?: ProviderClientOptions["onResponse"];
  } = {},
) {
  // Called inside a test: a connection it opens is closed when the test ends, pass or fail.
  const redis = options.redis ?? new Redis(service("redisUrl"));
  if (!options.redis) onTestFinished(() => redis.disconnect());
  const client = new ProviderClient({
    baseUrl: sandbox.url,
    authUrl: sandbox.authUrl,
    audience: sandbox.audience,
    clientId: options.clientId ?? sandbox.clientId,
    clientSecret: options.clientSecret ?? sandbox.clientSecret,
    redis,
    secrets: FIXTURE_SECRETS,
    redisPrefix: options.prefix ?? `t-${randomUUID()}`,
    timeoutMs: options.timeoutMs ?? 2_000,
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.onResponse ? { onResponse: options.onResponse } : {}),
  });
  return { client, redis };
}

/** A valid provider order body. */
export function orderBody(overrides: Partial<OrderCreate> = {}): OrderCreate {
  const address = {
    line1: "1 Main St",
    city: "Springfield",
    stateOrProvinceCode: "IL",
    postalCode: "62701",
    countryCode: "US",
  };
  return {
    storeId: 1001,
    sourceOrderId: `src-${randomUUID()}`,
    orderNumber: "1001",
    orderName: "#1001",
    customer: {
      sourceCustomerId: "c-1",
      firstName: "Ada",
      lastName: "Lovelace",
      email: "ada@example.com",
    },
    lineItems: [
      { sourceLineItemId: "l-1", name: "T-shirt", quantity: 2, sku: "TS-1", tax: 1.6, price: 10 },
    ],
    shippingMoney: 5,
    subtotalMoney: 20,
    taxMoney: 1.6,
    totalMoney: 26.6,
    billingAddress: address,
    shippingAddress: address,
    sourceCreatedOn: "2026-11-01T10:00:00Z",
    ...overrides,
  };
}
