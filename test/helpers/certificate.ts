import { execFileSync } from "node:child_process";
import { chmodSync } from "node:fs";
import { join } from "node:path";

/**
 * A self-signed TLS certificate for `localhost` (and no other name) and its key, written into
 * `dir`: signed by no CA Node knows, as a managed service's own CA looks to it. The certificate
 * is its own CA (what NODE_EXTRA_CA_CERTS or sslrootcert is given).
 */
export function selfSignedCertificate(dir: string): { certificate: string; key: string } {
  const certificate = join(dir, "server.crt");
  const key = join(dir, "server.key");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      key,
      "-out",
      certificate,
      "-days",
      "7",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=DNS:localhost",
    ],
    { stdio: "ignore" },
  );
  chmodSync(key, 0o600);
  return { certificate, key };
}
