import { describe, expect, it } from "vitest";
import { certificateRefusal } from "../../src/lib/tls-refusal.ts";

const fixes = { trust: "give its CA (X)", skip: "skip the check (Y)" };

describe("certificateRefusal", () => {
  it("names each certificate problem with its fix, the setting where the host is wrong", () => {
    expect(certificateRefusal({ code: "SELF_SIGNED_CERT_IN_CHAIN" }, "DATABASE_URL", fixes)).toBe(
      "the server's TLS certificate is not trusted (SELF_SIGNED_CERT_IN_CHAIN); give its CA (X), or skip the check (Y)",
    );
    expect(
      certificateRefusal({ code: "UNABLE_TO_GET_ISSUER_CERT_LOCALLY" }, "REDIS_URL", {
        trust: "give its CA (X)",
      }),
    ).toBe(
      "the server's TLS certificate is not trusted (UNABLE_TO_GET_ISSUER_CERT_LOCALLY); give its CA (X)",
    );
    expect(certificateRefusal({ code: "ERR_TLS_CERT_ALTNAME_INVALID" }, "REDIS_URL", fixes)).toBe(
      "the server's TLS certificate is for another host name (ERR_TLS_CERT_ALTNAME_INVALID); put a host name it names in REDIS_URL, or skip the check (Y)",
    );
    expect(certificateRefusal({ code: "CERT_HAS_EXPIRED" }, "REDIS_URL", fixes)).toBe(
      "the server's TLS certificate is out of date (CERT_HAS_EXPIRED); renew the server's certificate, or check this machine's clock",
    );
  });

  it("leaves every other error to the caller: an outage is waited out", () => {
    for (const code of ["ECONNREFUSED", "ETIMEDOUT", "ECONNRESET", undefined]) {
      expect(certificateRefusal({ code }, "REDIS_URL", fixes)).toBeUndefined();
    }
  });
});
