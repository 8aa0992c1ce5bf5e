import { randomBytes } from "node:crypto";
import { errors, jwtVerify, SignJWT } from "jose";
import type { Scope } from "./interface.ts";

export interface TokenClaims {
  clientId: string;
  scopes: string[];
  storeIds: number[];
}

/** HS256 JWT access tokens with the claims the real service puts in them (scope, store_id). */
export class TokenIssuer {
  readonly #key = randomBytes(32);
  /**
   * Tokens whose signature and audience were checked once, with their expiry: a client sends the
   * same token for an hour, and an HMAC check through WebCrypto per request was most of what the
   * sandbox spent answering a sync worker (bench:worker). The expiry is still checked each time.
   */
  readonly #verified = new Map<string, { claims: TokenClaims; expiresAtMs: number }>();

  constructor(readonly audience: string) {}

  async issue(claims: {
    clientId: string;
    scopes: readonly Scope[] | string[];
    storeIds: number[];
    expiresInSeconds: number;
  }) {
    const nowSeconds = Math.floor(Date.now() / 1000);
    return new SignJWT({ scope: claims.scopes.join(" "), store_id: claims.storeIds })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(claims.clientId)
      .setAudience(this.audience)
      .setIssuedAt(nowSeconds)
      .setExpirationTime(nowSeconds + claims.expiresInSeconds)
      .sign(this.#key);
  }

  /** The claims of a valid token, or the reason it is not one. */
  async verify(token: string): Promise<TokenClaims | { invalid: string }> {
    const known = this.#verified.get(token);
    if (known) {
      if (Date.now() < known.expiresAtMs) return known.claims;
      this.#verified.delete(token);
      return { invalid: "the access token has expired" };
    }
    try {
      const { payload } = await jwtVerify(token, this.#key, {
        audience: this.audience,
        algorithms: ["HS256"],
      });
      const claims: TokenClaims = {
        clientId: String(payload.sub),
        scopes: String(payload.scope ?? "")
          .split(" ")
          .filter(Boolean),
        storeIds: Array.isArray(payload.store_id) ? payload.store_id.map(Number) : [],
      };
      if (typeof payload.exp === "number") {
        // Bounded: a run that issues many tokens keeps the newest.
        if (this.#verified.size >= 10_000) this.#verified.clear();
        this.#verified.set(token, { claims, expiresAtMs: payload.exp * 1000 });
      }
      return claims;
    } catch (error) {
      return {
        invalid:
          error instanceof errors.JWTExpired
            ? "the access token has expired"
            : "the access token is invalid",
      };
    }
  }
}
