import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/lib/logger.ts";
import { errorFromResponse, ProviderValidationError } from "../../src/provider/errors.ts";

/**
 * A provider's error body is free text that can quote what was sent: an email, a name, an
 * address. The client keeps its status, code and field paths only, and the logger censors
 * customer data and secrets at any depth.
 */
const QUOTED = "jane.doe@example.com";

function lines(log: (logger: ReturnType<typeof createLogger>) => void): string {
  let out = "";
  const sink = new Writable({
    write(chunk, _encoding, done) {
      out += chunk.toString();
      done();
    },
  });
  log(createLogger("info", sink));
  return out;
}

describe("provider error bodies", () => {
  it("keep the status, code and field paths, never the provider's text", () => {
    const body = {
      error: {
        code: "validation_error",
        message: `customer.email ${QUOTED} is not deliverable; shipped to 1 Elm Street`,
        fields: [{ path: "customer.email", message: `${QUOTED} is not deliverable` }],
      },
      requestId: "r-1",
      echo: { customer: { email: QUOTED } },
    };
    const error = errorFromResponse(
      { status: 400, headers: new Headers({ "x-request-id": "r-1" }) },
      body,
      { method: "POST", path: "/orders" },
    );
    expect(error).toBeInstanceOf(ProviderValidationError);
    expect(error.status).toBe(400);
    expect(error.body).toEqual({ code: "validation_error", fields: ["customer.email"] });
    expect(error.message).toBe(
      "POST /orders answered 400: validation_error; fields customer.email",
    );
    expect(JSON.stringify({ ...error, message: error.message })).not.toContain(QUOTED);
  });

  it("keep nothing of a plain-text body", () => {
    const error = errorFromResponse(
      { status: 502, headers: new Headers() },
      `upstream said: ${QUOTED} ${"x".repeat(600)}`,
      { method: "PUT", path: "/orders/1" },
    );
    expect(error.message).toBe("PUT /orders/1 answered 502");
    expect(error.body).toBeUndefined();
  });
});

describe("log redaction", () => {
  it("censors customer data and secrets at any depth, in arrays and errors too", () => {
    const out = lines((logger) =>
      logger.error(
        {
          a: { b: { c: { d: { e: { email: QUOTED, phone: "+15555550100" } } } } },
          list: [[{ shipping_address: { address1: "1 Elm Street" } }]],
          err: Object.assign(new Error("failed"), { token: "secret-token-value" }),
          job: { data: { payload: { customer: { first_name: "Jane" } } } },
        },
        "failure",
      ),
    );
    for (const secret of [QUOTED, "+15555550100", "1 Elm Street", "Jane"]) {
      expect(out).not.toContain(secret);
    }
    expect(out).toContain("[redacted]");
    expect(JSON.parse(out).msg).toBe("failure");
  });

  it("leaves a line without sensitive keys as it is", () => {
    const out = lines((logger) => logger.info({ shop: "s.myshopify.com", orderId: "1" }, "ok"));
    expect(JSON.parse(out)).toMatchObject({ shop: "s.myshopify.com", orderId: "1", msg: "ok" });
  });
});
