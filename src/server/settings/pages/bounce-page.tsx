import { raw } from "hono/html";

/**
 * Shopify's "session token bounce": a page load inside the admin without a valid session token
 * (a reload a minute after the admin opened the app) asks App Bridge for a fresh one and loads
 * the same URL again with it. `bounced=1` stops a second bounce: a token that still fails then
 * gets the sign-in message instead of a loop.
 */
const BOUNCE = `
shopify.idToken().then((token) => {
  const url = new URL(location.href);
  url.searchParams.set("id_token", token);
  url.searchParams.set("bounced", "1");
  location.replace(url.toString());
});`;

export function BouncePage(props: { apiKey: string; appBridgeUrl: string; nonce: string }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="shopify-api-key" content={props.apiKey} />
        <script src={props.appBridgeUrl} nonce={props.nonce} />
        <title>Loading · Order sync</title>
        <script nonce={props.nonce}>{raw(BOUNCE)}</script>
      </head>
      <body />
    </html>
  );
}
