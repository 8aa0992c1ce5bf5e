import { randomBytes, randomUUID } from "node:crypto";
import { jwtVerify, SignJWT } from "jose";

/** Shopify's session tokens live one minute. */
const SESSION_TOKEN_TTL_SECONDS = 60;

/** A session token (id token) for `shop` as Shopify's admin issues them: HS256 with the secret. */
export async function mintSessionToken(
  shop: string,
  options: { apiKey: string; apiSecret: string },
  ttlSeconds = SESSION_TOKEN_TTL_SECONDS,
): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ dest: `https://${shop}`, sid: randomBytes(16).toString("hex") })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuer(`https://${shop}/admin`)
    .setAudience(options.apiKey)
    .setSubject("1")
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + ttlSeconds)
    .setJti(randomUUID())
    .sign(new TextEncoder().encode(options.apiSecret));
}

/** The shop a session token was issued for, or null (bad signature, audience, expiry). */
export async function verifySessionToken(
  token: string,
  options: { apiKey?: string; apiSecret: string },
): Promise<string | null> {
  try {
    const { payload } = await jwtVerify(token, new TextEncoder().encode(options.apiSecret), {
      algorithms: ["HS256"],
      ...(options.apiKey ? { audience: options.apiKey } : {}),
    });
    return typeof payload.dest === "string" ? new URL(payload.dest).hostname : null;
  } catch {
    return null;
  }
}

/**
 * The stand-in App Bridge (`/app-bridge.js`), for the connector's page inside the stand-in admin:
 * `shopify.idToken()` asks the admin frame above for a session token by postMessage, and
 * `fetch` to the app's own origin gets `Authorization: Bearer <token>`, as Shopify's App Bridge
 * does. The request names the app's API key (the page's `shopify-api-key` meta); the admin
 * answers only to the app's origin.
 */
