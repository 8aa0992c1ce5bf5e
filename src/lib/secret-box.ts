import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

/**
 * AES-256-GCM for secrets at rest (Shopify access tokens, provider client secrets): a random
 * 12-byte IV per value, the tag checked on open. Format: `v1:` + base64(iv | tag | ciphertext).
 */
export function createSecretBox(keyBase64: string): SecretBox {
  const key = Buffer.from(keyBase64, "base64");
  if (key.length !== 32) throw new Error("the encryption key must be 32 bytes (base64)");
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
      return `v1:${Buffer.concat([iv, cipher.getAuthTag(), data]).toString("base64")}`;
    },
    open(sealed) {
      if (!sealed.startsWith("v1:")) throw new Error("not a sealed value");
      const raw = Buffer.from(sealed.slice(3), "base64");
      if (raw.length < 28) throw new Error("sealed value is truncated");
      const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      try {
        return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString(
          "utf8",
        );
      } catch {
        throw new Error("sealed value was tampered with or sealed with another key");
      }
    },
  };
}
