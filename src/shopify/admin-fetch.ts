// The adapter first: it installs the platform fetch that the rewrite below wraps.
import "./api.ts";
import { abstractFetch, setAbstractFetchFunc } from "@shopify/shopify-api/runtime";

let installedFor: string | null = null;

/**
 * Points `@shopify/shopify-api` at a stand-in Shopify. The library builds
 * `https://{shop}/admin/...` URLs (it forces https), so every call under /admin is sent to
 * `adminUrl` instead, with the shop's domain kept in X-Forwarded-Host. The library's fetch is
 * process-wide: the last origin installed wins, and clients read it when they are created.
 */
export function installAdminFetchRewrite(adminUrl: string) {
  if (installedFor === adminUrl) return;
  const platformFetch = installedFor === null ? abstractFetch : globalThis.fetch;
  installedFor = adminUrl;
  const origin = new URL(adminUrl);
  setAbstractFetchFunc(async (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!url.pathname.startsWith("/admin/")) return platformFetch(input, init);
    const target = new URL(`${url.pathname}${url.search}`, origin);
    const headers = new Headers(input instanceof Request ? input.headers : init?.headers);
    headers.set("x-forwarded-host", url.host);
    if (input instanceof Request) {
      return platformFetch(
        new Request(target, { ...init, method: input.method, headers, body: input.body }),
      );
    }
    return platformFetch(target, { ...init, headers });
  });
}
