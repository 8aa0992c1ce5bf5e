import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { afterAll, afterEach, beforeAll } from "vitest";

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

/** What a browser test opens and closes after itself: a browser context, an install harness. */
interface Closable {
  close(): Promise<void>;
}

/**
 * A browser test file's Chromium, launched once for the file and closed after it; after each
 * test, what `opened` names (its browser context, then its harness) is closed, each once,
 * whether or not the next test opens its own.
 */
export function chromiumPerFile(
  options: { embedded?: boolean },
  opened: () => (Closable | undefined)[],
): Pick<Browser, "newContext"> {
  let browser: Browser | undefined;
  const closed = new WeakSet<Closable>();
  beforeAll(async () => {
    browser = await launchChromium(options);
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    for (const item of opened()) {
      if (item === undefined || closed.has(item)) continue;
      closed.add(item);
      await item.close();
    }
  });
  return {
    newContext: (contextOptions) => {
      if (!browser) throw new Error("chromiumPerFile: the browser is launched in beforeAll");
      return browser.newContext(contextOptions);
    },
  };
}
