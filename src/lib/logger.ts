import { type Logger, pino } from "pino";

/**
 * Structured logs with customer data and secrets redacted (STYLE.md item 8). Every path that
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

export const REDACT_PATHS = SENSITIVE_KEYS.flatMap((key) => [key, `*.${key}`, `*.*.${key}`]);

export function createLogger(level = "info", destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: { paths: REDACT_PATHS, censor: "[redacted]" },
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

export type { Logger };
