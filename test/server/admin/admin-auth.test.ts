import { afterEach, describe, expect, it } from "vitest";
import { ADMIN_COOKIE, tokenMatches } from "../../../src/server/admin/index.ts";
import { type Pipeline, startPipeline } from "../../helpers/pipeline.ts";

const TOKEN = "admin-token-for-tests-0123456789";

let pipeline: Pipeline | undefined;
afterEach(async () => {
  await pipeline?.close();
  pipeline = undefined;
});

const request = (path: string, init: RequestInit = {}) => {
  if (!pipeline) throw new Error("no pipeline");
  return pipeline.web.app.request(path, init);
};

describe("admin authentication", () => {
  it("compares tokens by content, whatever their length", () => {
    expect(tokenMatches(TOKEN, TOKEN)).toBe(true);
    expect(tokenMatches(`${TOKEN}x`, TOKEN)).toBe(false);
    expect(tokenMatches("", TOKEN)).toBe(false);
  });

  it("keeps the admin area closed, with a clear message, when ADMIN_TOKEN is not set", async () => {
    pipeline = await startPipeline();
    for (const path of ["/admin/api", "/admin/api/dead-letters", "/admin/queues", "/admin/login"]) {
      const response = await request(path, {
        headers: { authorization: "Bearer anything-at-all" },
      });
      expect(response.status, path).toBe(403);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("admin_disabled");
      expect(body.error.message).toContain("ADMIN_TOKEN");
    }
  });

  it("refuses the API without a token (401) and with a wrong one (401 invalid_token)", async () => {
    pipeline = await startPipeline({ env: { ADMIN_TOKEN: TOKEN } });
    const missing = await request("/admin/api");
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toContain("Bearer");
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe(
      "missing_token",
    );

    const wrong = await request("/admin/api", {
      headers: { authorization: `Bearer ${TOKEN.slice(0, -1)}X` },
    });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: { code: string } }).error.code).toBe("invalid_token");

    const ok = await request("/admin/api", { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
  });

  it("exchanges ?token= for an http-only session cookie and drops the token from the URL", async () => {
    pipeline = await startPipeline({ env: { ADMIN_TOKEN: TOKEN } });
    const exchange = await request(`/admin/api?token=${TOKEN}&x=1`);
    expect(exchange.status).toBe(303);
    expect(exchange.headers.get("location")).toBe("/admin/api?x=1");
    const setCookie = exchange.headers.get("set-cookie") ?? "";
    expect(setCookie).toContain(`${ADMIN_COOKIE}=`);
    expect(setCookie).toContain("HttpOnly");
    expect(setCookie).toContain("SameSite=Strict");
    const cookie = setCookie.split(";")[0] ?? "";

    const withCookie = await request("/admin/api", { headers: { cookie } });
    expect(withCookie.status).toBe(200);

    // A cookie whose value was changed names no session.
    const [name, value] = cookie.split("=");
    const forged = `${name}=${String(Date.now() + 10 ** 9)}.${value?.split(".")[1] ?? ""}`;
    expect((await request("/admin/api", { headers: { cookie: forged } })).status).toBe(401);

    const wrong = await request("/admin/api?token=not-the-token-at-all");
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("set-cookie")).toBeNull();
  });

  it("logs a browser in from the form and only redirects inside /admin", async () => {
    pipeline = await startPipeline({ env: { ADMIN_TOKEN: TOKEN } });
    const form = await request("/admin/login");
    expect(form.status).toBe(200);
    expect(await form.text()).toContain('name="token"');

    const bad = await request("/admin/login", {
      method: "POST",
      body: new URLSearchParams({ token: "wrong-token-wrong-token", next: "/admin/queues" }),
    });
    expect(bad.status).toBe(401);
    expect(await bad.text()).toContain("not valid");

    const good = await request("/admin/login", {
      method: "POST",
      body: new URLSearchParams({ token: TOKEN, next: "https://evil.example/admin" }),
    });
    expect(good.status).toBe(303);
    expect(good.headers.get("location")).toBe("/admin/queues");
    expect(good.headers.get("set-cookie")).toContain(`${ADMIN_COOKIE}=`);
  });

  it("shows browsers the login form, with status 401, instead of an admin page", async () => {
    pipeline = await startPipeline({ env: { ADMIN_TOKEN: TOKEN } });
    const response = await request("/admin/api", { headers: { accept: "text/html" } });
    expect(response.status).toBe(401);
    expect(await response.text()).toContain("<form");
  });

  it("sends /admin and /admin/ to the dashboard, which then asks a browser to log in", async () => {
    pipeline = await startPipeline({ env: { ADMIN_TOKEN: TOKEN } });
    for (const path of ["/admin", "/admin/"]) {
      const response = await request(path, { headers: { accept: "text/html" } });
      expect(response.status, path).toBe(302);
      expect(response.headers.get("location"), path).toBe("/admin/queues");
    }
    // The token link works from the short address too: it reaches the dashboard's exchange.
    const link = await request(`/admin?token=${TOKEN}`);
    expect(link.headers.get("location")).toBe(`/admin/queues?token=${TOKEN}`);
    const dashboard = await request("/admin/queues", { headers: { accept: "text/html" } });
    expect(dashboard.status).toBe(401);
    expect(await dashboard.text()).toContain("<form");
  });
});
