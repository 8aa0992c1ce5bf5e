import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/**
 * Secrets at rest (Shopify tokens, provider client secrets, cached provider tokens), sealed
 * with AES-256-GCM.
 *
 * Each value is bound to what it is and whose it is (`context`, e.g.
 * `shops.access_token:my-shop.myshopify.com`) as associated data: a sealed value copied to
 * another shop's row or another column does not open. Each names the key that sealed it (a
 * fingerprint), so the key can be rotated: ENCRYPTION_KEY seals, ENCRYPTION_KEY_PREVIOUS still
 * opens, and `connector secrets rotate` re-seals what the previous key sealed.
 *
 * Format: `v2:<key id>:` + base64(iv | tag | ciphertext). Values of the first format (`v1:`,
 * no key id, no associated data) still open, and `isCurrent` says they need re-sealing.
 */
export interface SecretBox {
  seal(plain: string, context: string): string;
  open(sealed: string, context: string): string;
  /** Sealed by the current key in the current format (nothing for `secrets rotate` to do). */
  isCurrent(sealed: string): boolean;
  /** The current key's id, as sealed values name it. */
  readonly keyId: string;
}

/** The sealed value cannot be opened: the wrong key, another context, or altered bytes. */
export class SealedValueError extends Error {
  override name = "SealedValueError";
}

/** The first 8 hex digits of the key's SHA-256: names the key without revealing it. */
export function keyIdOf(key: Buffer): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 8);
}

function decodeKey(base64: string): Buffer {
  const key = Buffer.from(base64, "base64");
  if (key.length !== 32) throw new Error("the encryption key must be 32 bytes (base64)");
  return key;
}

function decrypt(key: Buffer, raw: Buffer, aad: Buffer | null): string {
  if (raw.length < 28) throw new SealedValueError("sealed value is truncated");
  const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  if (aad) decipher.setAAD(aad);
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
}

export function createSecretBox(currentBase64: string, previousBase64: string[] = []): SecretBox {
  const current = decodeKey(currentBase64);
  const keyId = keyIdOf(current);
  const keys = new Map<string, Buffer>([[keyId, current]]);
  for (const base64 of previousBase64) {
    const key = decodeKey(base64);
    keys.set(keyIdOf(key), key);
  }
  const aadOf = (id: string, context: string) => Buffer.from(`v2:${id}:${context}`, "utf8");

  return {
    keyId,
    seal(plain, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", current, iv);
      cipher.setAAD(aadOf(keyId, context));
      const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return `v2:${keyId}:${Buffer.concat([iv, cipher.getAuthTag(), data]).toString("base64")}`;
    },
    open(sealed, context) {
      if (sealed.startsWith("v1:")) {
        // The first format: no key id, so every configured key is tried; no associated data.
        const raw = Buffer.from(sealed.slice(3), "base64");
        for (const key of keys.values()) {
          try {
            return decrypt(key, raw, null);
          } catch {}
        }
        throw new SealedValueError(
          "sealed value was tampered with or sealed with another key (neither ENCRYPTION_KEY nor ENCRYPTION_KEY_PREVIOUS opens it)",
        );
      }
      const match = /^v2:([0-9a-f]{8}):(.+)$/.exec(sealed);
      if (!match?.[1] || !match[2]) throw new SealedValueError("not a sealed value");
      const key = keys.get(match[1]);
      if (!key) {
        throw new SealedValueError(
          `sealed with key ${match[1]}, which is neither ENCRYPTION_KEY (${keyId}) nor ENCRYPTION_KEY_PREVIOUS`,
        );
      }
      try {
        return decrypt(key, Buffer.from(match[2], "base64"), aadOf(match[1], context));
      } catch {
        throw new SealedValueError(
          "sealed value was tampered with, or belongs to another shop or column",
        );
      }
    },
    isCurrent(sealed) {
      return sealed.startsWith(`v2:${keyId}:`);
    },
  };
}

/** What each sealed value is bound to: its column and its owner. */
export const sealedFor = {
  providerClientSecret: (shop: string) => `shops.provider_client_secret:${shop}`,
  shopifyAccessToken: (shop: string) => `shops.access_token:${shop}`,
  shopifyRefreshToken: (shop: string) => `shops.refresh_token:${shop}`,
  session: (field: "accessToken" | "refreshToken", sessionId: string) =>
    `shopify_sessions.${field}:${sessionId}`,
  providerToken: (cacheKey: string) => `provider_token:${cacheKey}`,
  /** The provider's webhook secret, per account (environment and client ID). */
  providerWebhookSecret: (providerBaseUrl: string, clientId: string) =>
    `provider_webhook_secrets.secret:${providerBaseUrl}|${clientId}`,
};
