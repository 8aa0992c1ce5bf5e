import { createHmac, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { request } from "node:http";
import { parse } from "csv-parse/sync";

/**
 * The five attacks of issue 31, against a running connector (`npm start` with the stand-in
 * Shopify and the built-in provider sandbox). Each returns what it saw and whether the attack
 * worked; the probe prints them, and a test can assert on them.
 */

export interface Target {
  /** The connector, e.g. http://127.0.0.1:3000. */
  appUrl: string;
  /** The stand-in Shopify (OAuth, Admin API, /_standin). */
  shopifyUrl: string;
  /** The provider sandbox's control API base (its authUrl), e.g. http://127.0.0.1:3001. */
  sandboxUrl: string;
  /** The app's client secret (Shopify signs webhooks with it). */
  shopifySecret: string;
  /** The provider account's webhook secret for store 1001 (the sandbox signs with it). */
  providerWebhookSecret: string;
  adminToken: string;
  /** The connector's process ID, for its RSS (Linux /proc); omitted: RSS is not shown. */
  pid?: number;
}

export interface AttackResult {
  name: string;
  /** What the connector answered, in one line. */
  answer: string;
  /** True when the attack did what the issue says it did (the connector is vulnerable). */
  succeeded: boolean;
  detail?: string;
}

export const BROWSER_UA = "Mozilla/5.0 (X11; Linux x86_64) security-probe";

/** The process's resident set in MB (Linux), or null. */
export function rssMb(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = /VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1];
    return kb ? Math.round(Number(kb) / 1024) : null;
  } catch {
    return null;
  }
}

/** Name=value cookies, enough for one browser-less session. */
export class CookieJar {
  readonly #cookies = new Map<string, string>();
  take(response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(";");
      const eq = pair?.indexOf("=") ?? -1;
      if (!pair || eq < 0) continue;
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (value === "" || /expires=Thu, 01 Jan 1970/i.test(line)) this.#cookies.delete(name);
      else this.#cookies.set(name, value);
    }
  }
  header(): string {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }
}

const get = (t: Target, path: string, jar?: CookieJar) =>
  fetch(new URL(path, t.appUrl), {
    redirect: "manual",
    headers: { "user-agent": BROWSER_UA, ...(jar ? { cookie: jar.header() } : {}) },
  });

const postForm = (t: Target, path: string, body: Record<string, string>, jar: CookieJar) =>
  fetch(new URL(path, t.appUrl), {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      origin: t.appUrl,
      cookie: jar.header(),
      "user-agent": BROWSER_UA,
    },
    body: new URLSearchParams(body),
  });

/**
 * Installs a shop through the stand-in's OAuth, connects it to the sandbox (store 1001) and
 * returns its settings session.
 */
export async function installShop(t: Target, shop: string): Promise<CookieJar> {
  const jar = new CookieJar();
  const begin = await get(t, `/shopify/install?shop=${shop}`, jar);
  jar.take(begin);
  const authorize = new URL(begin.headers.get("location") ?? "");
  const approved = await fetch(`${t.shopifyUrl}${authorize.pathname}${authorize.search}`, {
    redirect: "manual",
    headers: { "x-forwarded-host": authorize.hostname },
  });
  const callback = await get(t, approved.headers.get("location") ?? "", jar);
  jar.take(callback);
  if (callback.status >= 400) throw new Error(`installing ${shop}: callback ${callback.status}`);
  const provider = await postForm(
    t,
    "/settings/provider",
    { clientId: "sandbox-client", clientSecret: "sandbox-secret", environment: "production" },
    jar,
  );
  const store = await postForm(t, "/settings/store", { storeId: "1001" }, jar);
  if (provider.status >= 400 || store.status >= 400) {
    throw new Error(`connecting ${shop}: provider ${provider.status}, store ${store.status}`);
  }
  return jar;
}

/**
 * 1: an unauthenticated multipart body to POST /settings/catalog?embedded=1, streamed lazily in
 * 1 MB chunks (never held in memory), stopped once answered. Worked when the connector read the
 * whole body (over the route's 5 MB) before answering, or its RSS grew by 50 MB or more.
 */
export async function bigUnauthenticatedBody(t: Target, megabytes: number): Promise<AttackResult> {
  const boundary = `probe${randomUUID().replaceAll("-", "")}`;
  const chunk = Buffer.alloc(1024 * 1024, 0x61);
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.csv"\r\nContent-Type: text/csv\r\n\r\n`,
  );
  const before = rssMb(t.pid);
  let peak = before ?? 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMb(t.pid) ?? 0);
  }, 100);
  const url = new URL("/settings/catalog?embedded=1", t.appUrl);
  try {
    const { status, sentMb } = await new Promise<{ status: number | "error"; sentMb: number }>(
      (resolve) => {
        let sent = 0;
        let answered = false;
        const req = request(url, {
          method: "POST",
          headers: {
            "content-type": `multipart/form-data; boundary=${boundary}`,
            "transfer-encoding": "chunked",
            // A script sets any Origin it likes: the app's own passes the CSRF check.
            origin: new URL(t.appUrl).origin,
            "user-agent": BROWSER_UA,
          },
        });
        const finish = (s: number | "error") => {
          if (answered) return;
          answered = true;
          resolve({ status: s, sentMb: Math.round(sent / 1024 / 1024) });
          req.destroy();
        };
        req.on("response", (res) => {
          res.resume();
          finish(res.statusCode ?? "error");
        });
        req.on("error", () => finish("error"));
        req.write(head);
        const pump = () => {
          while (!answered && sent < megabytes * 1024 * 1024) {
            sent += chunk.length;
            if (!req.write(chunk)) return void req.once("drain", pump);
          }
          if (!answered) req.end(Buffer.from(`\r\n--${boundary}--\r\n`));
        };
        pump();
      },
    );
    peak = Math.max(peak, rssMb(t.pid) ?? 0);
    const growth = before === null ? null : peak - before;
    // Read to the end before answering (more than the 5 MB limit), or memory grew with it.
    const readItAll = sentMb >= megabytes && megabytes > 8;
    const succeeded = readItAll || (growth !== null && growth >= 50) || status === 200;
    return {
      name: `1. ${megabytes} MB unauthenticated multipart to POST /settings/catalog?embedded=1`,
      answer: `${status} after ${sentMb} MB sent`,
      succeeded,
      detail:
        before === null
          ? "RSS not measured (no --pid)"
          : `RSS ${before} MB before, peak ${peak} MB (+${growth} MB)`,
    };
  } finally {
    clearInterval(sampler);
  }
}

const signShopify = (secret: string, body: string) =>
  createHmac("sha256", secret).update(body).digest("base64");

/**
 * 2: the shop's signed shop/update body (a Shop resource, as captured from a delivery) re-sent
 * as app/uninstalled with a new webhook ID. Worked when the shop's settings session then ends
 * (the uninstall was taken).
 */
export async function shopUpdateAsUninstall(
  t: Target,
  shop: string,
  jar: CookieJar,
): Promise<AttackResult> {
  const body = JSON.stringify({
    id: 1,
    name: shop.replace(/\.myshopify\.com$/, ""),
    domain: shop,
    myshopify_domain: shop,
    currency: "USD",
    iana_timezone: "America/New_York",
    updated_at: new Date().toISOString(),
  });
  const res = await fetch(new URL("/webhooks/shopify", t.appUrl), {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-shopify-topic": "app/uninstalled",
      "x-shopify-hmac-sha256": signShopify(t.shopifySecret, body),
      "x-shopify-shop-domain": shop,
      "x-shopify-api-version": "2026-10",
      "x-shopify-webhook-id": randomUUID(),
      "x-shopify-event-id": randomUUID(),
      "x-shopify-triggered-at": new Date().toISOString(),
    },
    body,
  });
  const text = (await res.text()).slice(0, 200);
  const settings = await get(t, "/settings", jar);
  return {
    name: "2. signed shop/update body replayed as app/uninstalled",
    answer: `${res.status} ${text}`,
    succeeded: settings.status !== 200,
    detail: `the shop's settings page afterwards: ${settings.status}`,
  };
}

const signProvider = (secret: string, body: string) =>
  `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

async function sandbox(t: Target, method: string, path: string, body?: unknown) {
  const res = await fetch(`${t.sandboxUrl}/_sandbox${path}`, {
    method,
    headers: { "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the sandbox's answers are read field by field
  return (await res.json()) as any;
}

async function sendProvider(t: Target, body: string, storeId: string) {
  const res = await fetch(new URL("/webhooks/provider", t.appUrl), {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-webhook-id": randomUUID(),
      "x-webhook-topic": "claim/created",
      "x-api-version": "v1",
      "x-store-id": storeId,
      "x-webhook-timestamp": String(Math.floor(Date.now() / 1000)),
      "x-webhook-signature": signProvider(t.providerWebhookSecret, body),
    },
    body,
  });
  return { status: res.status, text: (await res.text()).slice(0, 200) };
}

/**
 * 3: a claim body the sandbox delivered (store 1001), re-sent with a fresh timestamp and a new
 * delivery ID; and a store 1002 claim body sent with `X-Store-Id: 1001`. Worked when the replay
 * is recorded as a new event, or the other store's body is taken.
 */
export async function providerReplay(t: Target): Promise<AttackResult> {
  const opened = await sandbox(t, "POST", "/claims", { storeId: 1001, sourceOrderId: "1" });
  const other = await sandbox(t, "POST", "/claims", { storeId: 1002, sourceOrderId: "2" });
  const { deliveries } = await sandbox(t, "GET", "/webhooks/deliveries");
  const bodyOf = (webhookId: string) =>
    (deliveries as { webhookId: string; body: string }[]).find((d) => d.webhookId === webhookId)
      ?.body ?? "";
  const replay = await sendProvider(t, bodyOf(opened.delivery.webhookId), "1001");
  const rerouted = await sendProvider(t, bodyOf(other.delivery.webhookId), "1001");
  // A replay that is recorded as a new event ("queued") is the attack working. "requeued" is
  // the replay known as the sandbox's own delivery, not yet processed (on a busy machine): its
  // one event is queued again under its own job ID, and nothing happens twice. A body of another
  // store must not be taken at all.
  const accepted = (r: { status: number; text: string }) =>
    r.status === 200 && /"queued"|"requeued"/.test(r.text);
  const newEvent = (r: { status: number; text: string }) =>
    r.status === 200 && /"queued"/.test(r.text);
  return {
    name: "3. claim body replayed with a new ID and fresh timestamp; store 1002 body as X-Store-Id 1001",
    answer: `replay: ${replay.status} ${replay.text} | other store: ${rerouted.status} ${rerouted.text}`,
    succeeded: newEvent(replay) || accepted(rerouted),
  };
}

/**
 * 4: a registration whose customer name is "\n=3+3", downloaded as the registrations CSV. Worked
 * when a spreadsheet (rows end at CRLF, LF or CR outside quotes) reads a cell starting with `=`.
 */
export async function csvInjection(t: Target, jar: CookieJar): Promise<AttackResult> {
  const externalId = `PROBE-${randomUUID().slice(0, 8)}`;
  await sandbox(t, "POST", "/registrations", {
    storeId: 1001,
    registrations: [
      {
        externalId,
        customerEmail: "probe@example.com",
        customerName: "\n=3+3",
        channelName: "web",
      },
    ],
  });
  const res = await get(t, `/settings/registrations.csv?externalId=${externalId}`, jar);
  const text = await res.text();
  let rows: string[][] = [];
  try {
    rows = parse(text, {
      bom: true,
      record_delimiter: ["\r\n", "\n", "\r"],
      relax_column_count: true,
    });
  } catch (error) {
    return {
      name: '4. registrations CSV with "\\n=3+3" in a cell',
      answer: `${res.status}, unreadable CSV: ${(error as Error).message}`,
      succeeded: false,
    };
  }
  const formula = rows.flat().find((cell) => /^[=+\-@|\t\r]/.test(cell));
  return {
    name: '4. registrations CSV with "\\n=3+3" in a cell',
    answer: `${res.status} ${res.headers.get("content-type")}, ${rows.length} rows as a spreadsheet reads them`,
    succeeded: res.status !== 200 ? false : formula !== undefined,
    detail:
      formula === undefined
        ? "no cell starts a formula"
        : `a cell reads ${JSON.stringify(formula)}`,
  };
}

/**
 * 5: the admin cookie reused after POST /admin/logout. Worked when /admin/api/status still
 * answers 200 with it.
 */
export async function adminCookieAfterLogout(t: Target): Promise<AttackResult> {
  const jar = new CookieJar();
  const login = await fetch(new URL("/admin/login", t.appUrl), {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      origin: t.appUrl,
      "user-agent": BROWSER_UA,
    },
    body: new URLSearchParams({ token: t.adminToken, next: "/admin" }),
  });
  jar.take(login);
  const cookie = jar.header();
  const logout = await fetch(new URL("/admin/logout", t.appUrl), {
    method: "POST",
    redirect: "manual",
    headers: { cookie, origin: t.appUrl, "user-agent": BROWSER_UA },
  });
  const after = await fetch(new URL("/admin/api/status", t.appUrl), {
    headers: { cookie, "user-agent": BROWSER_UA },
  });
  await after.arrayBuffer();
  return {
    name: "5. admin cookie reused after POST /admin/logout",
    answer: `login ${login.status}, logout ${logout.status}, /admin/api/status with the old cookie: ${after.status}`,
    succeeded: cookie !== "" && after.status === 200,
  };
}
