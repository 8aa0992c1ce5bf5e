import { raw } from "hono/html";
import type { Child } from "hono/jsx";
import type { EmbeddedParams } from "../../install/embedded.ts";
import { STYLES } from "./styles.ts";
import { type SettingsTabId, SettingsTabs } from "./tabs.tsx";

/** What a page needs to run inside the Shopify admin. */
export interface EmbeddedAssets {
  apiKey: string;
  appBridgeUrl: string;
  /** Polaris web components; null where they cannot load (development, offline). */
  polarisUrl: string | null;
}

/**
 * Inside the admin a form cannot carry a cookie (the frame is a third-party context): before
 * it is sent, the page asks App Bridge for a fresh session token, adds it as `id_token`, and
 * keeps the admin's `embedded`, `shop` and `host` in the action so the answer stays embedded.
 * A file upload (multipart) carries the token in its action's query instead: the connector
 * reads no multipart body before it knows who sent it. When App Bridge gives no token (the
 * admin's own session is gone, the network failed) nothing is sent and a message above the form
 * says so, with everything typed still in place; a second submit while a token is asked for (a
 * double click) is ignored.
 */
const SIGN_FORMS = `
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || form.dataset.signed === "1") return;
  event.preventDefault();
  if (form.dataset.signing === "1") return;
  const here = new URLSearchParams(location.search);
  const action = new URL(form.getAttribute("action") || location.pathname, location.href);
  for (const name of ["embedded", "shop", "host"]) {
    const value = here.get(name);
    if (value !== null) action.searchParams.set(name, value);
  }
  form.dataset.signing = "1";
  let token;
  try {
    token = await shopify.idToken();
  } catch {
    delete form.dataset.signing;
    formNote(form, [
      "Shopify did not confirm your session, so nothing was saved yet. What you typed is still here: press " + buttonName(event) + " again in a moment, or reload the app from your Shopify admin if this repeats.",
    ]);
    return;
  }
  delete form.dataset.signing;
  formNote(form, null);
  if (form.enctype === "multipart/form-data") {
    action.searchParams.set("id_token", token);
  } else {
    let field = form.querySelector('input[name="id_token"]');
    if (!field) {
      field = document.createElement("input");
      field.type = "hidden";
      field.name = "id_token";
      form.append(field);
    }
    field.value = token;
  }
  form.action = action.toString();
  form.dataset.signed = "1";
  form.requestSubmit(event.submitter || undefined);
  form.dataset.sent = "1";
});`;

/**
 * Links within the settings area (tabs, paging, the CSV download) carry `embedded`, `shop` and
 * `host`; on click the page adds a fresh session token, as it does for forms. A download
 * answers with an attachment, so the frame stays where it is.
 */
const SIGN_LINKS = `
document.addEventListener("click", async (event) => {
  const link = event.target instanceof Element ? event.target.closest('a[href^="/settings"]') : null;
  if (!link || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  const url = new URL(link.getAttribute("href"), location.href);
  // Without a token the page loads through the bounce page, which asks for one again.
  try {
    url.searchParams.set("id_token", await shopify.idToken());
  } catch {}
  location.assign(url.toString());
});`;

/**
 * A form already sent is not sent again while its answer loads (a double click, a click more
 * while the page is slow): one save, one backfill, one resync. The page that answers starts
 * afresh (the back button reloads it).
 *
 * A message above a form about why it was not sent (`parts`: text and elements), replacing any
 * earlier one; null removes it. An alert, so a screen reader says it at once. Also the name of
 * the button that sent a form, to say which to press again.
 */
const FORM_NOTE = `
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form instanceof HTMLFormElement && form.dataset.sent === "1") {
    event.preventDefault();
    event.stopImmediatePropagation();
  }
}, true);
function formNote(form, parts) {
  form.parentElement.querySelector("[data-form-note]")?.remove();
  if (!parts) return null;
  const note = document.createElement("p");
  note.className = "notice error";
  note.setAttribute("role", "alert");
  note.dataset.formNote = "";
  note.append(...parts);
  form.before(note);
  return note;
}
function buttonName(event) {
  const text = event.submitter && event.submitter.textContent.trim();
  return text ? "“" + text + "”" : "the button";
}`;

/**
 * Outside the admin the session is a cookie that ends (8 hours, or an uninstall). A page left
 * open past that would post its form into a "sign in" page and lose what was typed. Before a form
 * is sent, the page asks whether its session still holds (`GET /settings/session`); when it does
 * not, the form stays as typed, nothing is sent, and a message above the form links to signing in
 * again in a new tab, after which the same button saves. A network failure lets the form go as
 * usual. A second submit while the check runs (a double click) is ignored.
 */
const KEEP_TYPED = `
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || form.dataset.checked === "1") return;
  event.preventDefault();
  if (form.dataset.checking === "1") return;
  form.dataset.checking = "1";
  let ended = false;
  try {
    const res = await fetch("/settings/session", { credentials: "same-origin", cache: "no-store" });
    ended = res.status === 401;
  } catch {}
  delete form.dataset.checking;
  if (ended) {
    const link = document.createElement("a");
    link.href = "/shopify/install?shop=" + encodeURIComponent(document.body.dataset.shop || "");
    link.target = "_blank";
    link.rel = "noopener";
    link.textContent = "Sign in again in a new tab";
    formNote(form, [
      "Your session has ended, so nothing was saved yet. ",
      link,
      ", then come back here and press " + buttonName(event) + " again: what you typed is kept.",
    ]);
    link.focus();
    return;
  }
  formNote(form, null);
  form.dataset.checked = "1";
  form.requestSubmit(event.submitter || undefined);
  delete form.dataset.checked;
  form.dataset.sent = "1";
});`;

/** A page brought back by the back button from memory shows its state then: load it again. */
const FRESH_ON_BACK = `
addEventListener("pageshow", (event) => {
  if (event.persisted) location.reload();
});`;

export function Layout(props: {
  title: string;
  shop?: string;
  /** The response's CSP nonce (its style and scripts run only with it). */
  nonce: string;
  embedded?: EmbeddedAssets | undefined;
  /** The settings tab this page is (the tab bar is shown above it); none for message pages. */
  tab?: SettingsTabId;
  /** Inside the admin: what links keep to stay there. */
  nav?: EmbeddedParams | undefined;
  children: Child;
}) {
  const { embedded } = props;
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="same-origin" />
        {embedded ? <meta name="shopify-api-key" content={embedded.apiKey} /> : null}
        {/* App Bridge first and synchronous, as Shopify requires. */}
        {embedded ? <script src={embedded.appBridgeUrl} nonce={props.nonce} /> : null}
        {embedded?.polarisUrl ? <script src={embedded.polarisUrl} nonce={props.nonce} /> : null}
        <title>{props.title} · Order sync</title>
        <style nonce={props.nonce}>{raw(STYLES)}</style>
        {embedded ? (
          <script nonce={props.nonce}>{raw(FORM_NOTE + SIGN_FORMS + SIGN_LINKS)}</script>
        ) : null}
        {!embedded && props.shop ? (
          <script nonce={props.nonce}>{raw(FORM_NOTE + KEEP_TYPED)}</script>
        ) : null}
        {props.shop ? <script nonce={props.nonce}>{raw(FRESH_ON_BACK)}</script> : null}
      </head>
      <body class={embedded ? "embedded" : undefined} data-shop={props.shop}>
        {embedded ? (
          // The admin shows the app's name in its own title bar (App Bridge).
          <ui-title-bar title="Order sync" />
        ) : (
          <header>
            <h1>Shipping protection order sync</h1>
            {props.shop ? <p>Settings for {props.shop}</p> : null}
          </header>
        )}
        <main>
          <s-page>
            {embedded && props.shop ? <p class="shop-line">Settings for {props.shop}</p> : null}
            {props.tab ? <SettingsTabs current={props.tab} nav={props.nav} /> : null}
            {props.children}
          </s-page>
        </main>
      </body>
    </html>
  );
}
