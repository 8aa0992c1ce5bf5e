import { html } from "hono/html";

/** The one page the admin area shows without a token: a form that exchanges it for a session. */
export function loginPage(options: { next: string; error?: string | undefined }) {
  return html`<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Connector admin: log in</title>
    <style>
      body { font-family: system-ui, sans-serif; max-width: 28rem; margin: 4rem auto; padding: 0 1rem; }
      label, input, button { display: block; width: 100%; box-sizing: border-box; }
      input { padding: .5rem; margin: .5rem 0 1rem; }
      button { padding: .5rem; }
      .error { color: #b00020; }
    </style>
  </head>
  <body>
    <h1>Connector admin</h1>
    ${options.error ? html`<p class="error" role="alert">${options.error}</p>` : ""}
    <form method="post" action="/admin/login">
      <label for="token">Admin token (ADMIN_TOKEN)</label>
      <input id="token" name="token" type="password" autocomplete="current-password" required />
      <input type="hidden" name="next" value="${options.next}" />
      <button type="submit">Log in</button>
    </form>
  </body>
</html>`;
}
