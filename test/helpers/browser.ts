import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { type Browser, chromium } from "playwright-core";

/** Where the browser tests leave their screenshots, for a person to look at. */
export const ARTIFACTS = resolve(import.meta.dirname, "../../test-artifacts");

/**
 * Debian's Chromium (the test command installs it), headless, as every browser test runs it.
 * `embedded`: as a page inside the Shopify admin meets it, with third-party cookies blocked (as
 * Safari and Chrome's tracking protection do) and `localhost` another site than `127.0.0.1`.
 */
export function launchChromium(options: { embedded?: boolean } = {}): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-dev-shm-usage",
      ...(options.embedded
        ? ["--test-third-party-cookie-phaseout", "--host-resolver-rules=MAP localhost 127.0.0.1"]
        : []),
    ],
  });
}
