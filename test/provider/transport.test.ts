import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSecretBox } from "../../src/lib/secret-box.ts";
import {
  ProviderClient,
  ProviderConnectionError,
  ProviderError,
  ProviderRateLimitError,
  type ResponseInfo,
} from "../../src/provider/index.ts";
import { service } from "../helpers/services.ts";

/**
 * The provider client's default transport (undici `request` on a shared keep-alive pool)
 * against a plain HTTP server that answers the way some services do: header names in any case,
 * repeated headers, a body that is not JSON, a connection dropped before the answer.
 */
type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let server: Server;
let url: string;
let answer: Handler = (_req, res) => res.end("{}");
let redis: Redis;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/oauth/token") {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ access_token: "opaque-token", expires_in: 3600 }));
      return;
    }
    // The body is read before answering, as a real server would.
    req.resume();
    req.on("end", () => answer(req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  redis = new Redis(service("redisUrl"));
});
afterAll(async () => {
  redis.disconnect();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function client(timeoutMs = 2_000, onResponse?: (info: ResponseInfo) => void) {
  return new ProviderClient({
    ...(onResponse ? { onResponse } : {}),
    baseUrl: `${url}/v1`,
    authUrl: url,
    audience: "test",
    secrets: createSecretBox(randomBytes(32).toString("base64")),
    clientId: "client",
    clientSecret: "secret",
    redis,
    redisPrefix: `transport-${randomUUID()}`,
    timeoutMs,
  });
}

describe("provider client transport (undici)", () => {
  it("reads a 429's Retry-After and request id whatever the header names' case", async () => {
    answer = (_req, res) => {
      res.writeHead(429, {
        "Content-Type": "application/json",
        "RATELIMIT-REMAINING": "0",
        "Retry-After": "3",
        "X-Request-ID": "req-42",
      });
      res.end(JSON.stringify({ error: { code: "rate_limited", message: "slow down" } }));
    };
    const error = await client()
      .getStore(1001)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderRateLimitError);
    expect((error as ProviderRateLimitError).retryAfterMs).toBe(3_000);
    expect((error as ProviderRateLimitError).requestId).toBe("req-42");
  });

  it("learns the budget from the answer's headers, the older X-RateLimit spelling included", async () => {
    answer = (_req, res) => {
      res.writeHead(200, {
        "Content-Type": "application/json",
        "X-RateLimit-Limit": "100",
        "X-RateLimit-Remaining": "37",
        "X-RateLimit-Reset": "12",
      });
      res.end(JSON.stringify({ storeId: 1001, name: "Store" }));
    };
    const answers: ResponseInfo[] = [];
    const c = client(2_000, (info) => answers.push(info));
    await c.getStore(1001).catch(() => undefined);
    expect(answers.map((a) => [a.storeId, a.rateLimit])).toEqual([
      [1001, { limit: 100, remaining: 37, resetMs: 12_000 }],
    ]);
  });

  it("refuses a 200 whose body is not JSON, naming the call", async () => {
    answer = (_req, res) => {
      res.writeHead(200, { "Content-Type": "text/html" });
      res.end("<html>maintenance</html>");
    };
    const error = await client()
      .getStore(1001)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderError);
    expect((error as ProviderError).message).toBe("GET /stores/1001 answered 200 without JSON");
  });

  it("reports a write whose connection dropped before the answer as maybe committed", async () => {
    answer = (req) => req.socket.destroy();
    const error = await client()
      .updateOrder(1001, 10_001, { notes: "gift" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderConnectionError);
    expect((error as ProviderConnectionError).maybeCommitted).toBe(true);
    expect((error as ProviderConnectionError).message).toMatch(
      /^POST \/orders\/10001 got no answer/,
    );
  });

  it("gives up on an answer whose body stalls past the timeout", async () => {
    answer = (_req, res) => {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.write('{"storeId": 1001,');
      // The rest never comes.
    };
    const error = await client(300)
      .getStore(1001)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderConnectionError);
    expect((error as ProviderConnectionError).message).toBe(
      "GET /stores/1001: the answer was cut off",
    );
    expect((error as ProviderConnectionError).maybeCommitted).toBe(false);
  });
});
