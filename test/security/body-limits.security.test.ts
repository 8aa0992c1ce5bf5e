import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FORM_MAX_BYTES } from "../../src/server/app.ts";
import { type InstallHarness, startInstallHarness } from "../helpers/install-harness.ts";

/**
 * An unauthenticated client could make any form route buffer a body of any size (three 300 MB
 * bodies to /admin/login took a process from 222 MB to 2.5 GB). Every route but the webhooks'
 * answers 413 past 8 KB before it reads the body: the tests send the headers of a huge body,
 * and get their answer while most of it was never sent.
 */
let h: InstallHarness;
beforeAll(async () => {
  h = await startInstallHarness();
});
afterAll(() => h.close());

interface Sent {
  status: number;
  /** Body bytes written before the answer came. */
  written: number;
}

/**
 * Starts a POST of `declared` bytes (or chunked when null) and writes 1 KB chunks slowly, until
 * the server answers or `cap` bytes are written.
 */
function postHuge(path: string, declared: number | null, cap = 1024 * 1024): Promise<Sent> {
  const url = new URL(path, h.appUrl);
  return new Promise((resolve, reject) => {
    let written = 0;
    let answered = false;
    const req = request(
      url,
      {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          ...(declared === null ? {} : { "content-length": String(declared) }),
        },
      },
      (res) => {
        answered = true;
        res.resume();
        resolve({ status: res.statusCode ?? 0, written });
        req.destroy();
      },
    );
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    const chunk = Buffer.alloc(1024, "a");
    const pump = () => {
      if (answered || written >= cap) return;
      written += chunk.length;
      req.write(chunk);
      setTimeout(pump, 2);
    };
    pump();
  });
}

describe("body limits", () => {
  it.each(["/admin/login", "/settings/store", "/admin/api/dead-letters/retry"])(
    "answers 413 to a 300 MB declared body on %s before reading it",
    async (path) => {
      const sent = await postHuge(path, 300 * 1024 * 1024);
      expect(sent.status).toBe(413);
      expect(sent.written).toBeLessThan(64 * 1024);
    },
  );

  it("answers 413 to a chunked body once it passes 8 KB, not at its end", async () => {
    const sent = await postHuge("/admin/login", null);
    expect(sent.status).toBe(413);
    expect(sent.written).toBeGreaterThan(FORM_MAX_BYTES);
    expect(sent.written).toBeLessThan(256 * 1024);
  });

  it("still takes a login form of ordinary size", async () => {
    const res = await fetch(new URL("/admin/login", h.appUrl), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "token=not-the-token&next=%2Fadmin%2Fqueues",
    });
    expect(res.status).not.toBe(413);
  });
});
