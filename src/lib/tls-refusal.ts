/**
 * A server's TLS certificate that this process will not accept: Node's verification codes,
 * sorted by what fixes them. No wait changes a certificate, so a start-up stops on these with
 * the fix instead of waiting for a server that answers every time the same way.
 */
export type CertificateProblem = "untrusted" | "another-host" | "out-of-date";

const PROBLEMS: Record<string, CertificateProblem> = {
  // Signed by no CA Node knows: a managed service's own CA, a self-signed certificate.
  DEPTH_ZERO_SELF_SIGNED_CERT: "untrusted",
  SELF_SIGNED_CERT_IN_CHAIN: "untrusted",
  UNABLE_TO_GET_ISSUER_CERT: "untrusted",
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "untrusted",
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: "untrusted",
  CERT_UNTRUSTED: "untrusted",
  ERR_TLS_CERT_ALTNAME_INVALID: "another-host",
  CERT_HAS_EXPIRED: "out-of-date",
  CERT_NOT_YET_VALID: "out-of-date",
};

/**
 * One line for a certificate problem, `variable` being the setting that names the server, or
 * undefined for any other error: `fixes.trust` gives that client the CA, `fixes.skip` (where the
 * client has one) turns the check off.
 */
export function certificateRefusal(
  error: { code?: string },
  variable: string,
  fixes: { trust: string; skip?: string },
): string | undefined {
  const problem = error.code ? PROBLEMS[error.code] : undefined;
  if (!problem) return undefined;
  const skip = fixes.skip ? `, or ${fixes.skip}` : "";
  switch (problem) {
    case "untrusted":
      return `the server's TLS certificate is not trusted (${error.code}); ${fixes.trust}${skip}`;
    case "another-host":
      return `the server's TLS certificate is for another host name (${error.code}); put a host name it names in ${variable}${skip}`;
    case "out-of-date":
      return `the server's TLS certificate is out of date (${error.code}); renew the server's certificate, or check this machine's clock`;
  }
}
