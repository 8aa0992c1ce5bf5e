import { type Logger, pino } from "pino";
import { withoutQueryValues } from "./redact.ts";
import { traceFields } from "./tracing.ts";

/**
 * Structured logs with customer data and secrets redacted (docs/principles.md: logs are structured and clean). Every path that
 * could carry an email, a phone, an address, a token or a secret is censored by key name,
 * wherever it appears in the logged object.
 */
const SENSITIVE_KEYS = [
  "email",
  "phone",
  "customerEmail",
  "firstName",
  "lastName",
  "first_name",
  "last_name",
  "name",
  "address1",
  "address2",
  "line1",
  "line2",
  "billingAddress",
  "shippingAddress",
  "billing_address",
  "shipping_address",
  "customer",
  "authorization",
  "Authorization",
  "access_token",
  "accessToken",
  "client_secret",
  "clientSecret",
  "providerClientSecret",
  "password",
  "secret",
  "token",
  "body",
  "payload",
  "rawBody",
];

const SENSITIVE = new Set(SENSITIVE_KEYS);
const CENSOR = "[redacted]";

/**
 * An error's class (`DeadlineError`, `ReplyError`, `HTTPException`): what an error's `name` holds,
 * and never a person's. Kept where an error is logged (an Error, or the object under `err`), so an
 * operator reads which kind of failure it was; any other `name` (a customer's, a line item's) is
 * still censored.
 */
const ERROR_CLASS = /^[A-Z][A-Za-z0-9]*(Error|Exception)$/;

/**
 * The logged object with every sensitive key censored at any depth (pino's own `redact` takes
 * fixed paths, so a body nested one level deeper than foreseen went out whole). Objects without
 * a sensitive key are returned as they are, so the common line costs one walk and no copy.
 */
export function redactDeep(value: unknown, depth = 0, anError = false): unknown {
  // A failed query's message quotes its values (customer data, sealed secrets): left out.
  if (typeof value === "string") return withoutQueryValues(value);
  if (value === null || typeof value !== "object" || depth > 32) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    value.forEach((item, i) => {
      const clean = redactDeep(item, depth + 1, anError);
      if (clean === item) return;
      copy ??= [...value];
      copy[i] = clean;
    });
    return copy ?? value;
  }
  if (value instanceof Error) {
    const shown = { name: value.name, message: value.message, stack: value.stack };
    return redactDeep(shown, depth, true);
  }
  let copy: Record<string, unknown> | undefined;
  for (const [key, item] of Object.entries(value)) {
    const clean = !SENSITIVE.has(key)
      ? redactDeep(item, depth + 1, key === "err")
      : anError && key === "name" && typeof item === "string" && ERROR_CLASS.test(item)
        ? item
        : CENSOR;
    if (clean === item) continue;
    copy ??= { ...(value as Record<string, unknown>) };
    copy[key] = clean;
  }
  return copy ?? value;
}

export function createLogger(level = "info", destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      // Inside a span (tracing on): its trace_id and span_id, so a line finds its trace.
      mixin: traceFields,
      // The message too (`redactDeep` sees the logged object only): a line built from an error's
      // words may quote a failed query's values.
      hooks: {
        logMethod(args, method) {
          for (let i = 0; i < args.length; i++) {
            const arg = args[i];
            if (typeof arg === "string") (args as unknown[])[i] = withoutQueryValues(arg);
          }
          return method.apply(this, args);
        },
      },
      formatters: {
        level: (label) => ({ level: label }),
        log: (object) => redactDeep(object) as Record<string, unknown>,
      },
    },
    destination,
  );
}

export type { Logger };
