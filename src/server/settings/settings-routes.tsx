import { type Context, Hono } from "hono";
import { HTTPException } from "hono/http-exception";
import { registrationRoutes } from "../../features/registrations/routes.tsx";
import { errorText } from "../../lib/redact.ts";
import type { Catalog } from "../../settings/index.ts";
import { embeddedUrl } from "../install/embedded.ts";
import { MessagePage } from "./pages/message-page.tsx";
import { SettingsPage, type SettingsPageProps } from "./pages/settings-page.tsx";
import { SECTIONS } from "./sections/index.ts";
import type { SectionContext, SectionKit, SettingsSection } from "./sections/section.ts";
import { type Env, guardSettings, html, navOf, type SettingsRouteDeps } from "./settings-guard.tsx";

/**
 * GET /settings and its forms. Every route needs the shop's session cookie (set by the OAuth
 * callback) and reads the shop from it alone; forms are accepted only from APP_URL's origin
 * (Hono's csrf middleware) and the cookie is SameSite=Lax. Pages carry a strict CSP: scripts
 * and styles only with the response's nonce, forms only to this origin, framed only by the
 * Shopify admin. Embedded in the admin, Shopify's session token stands in for the cookie.
 *
 * The page is made of the sections in sections/ (each its loader, forms and view): a GET
 * loads and shows them all; a refused form shows its own section again, and loads only that.
 */
export type { SettingsRouteDeps };

export function settingsRoutes(deps: SettingsRouteDeps) {
  const { service, shops } = deps;
  const app = new Hono<Env>();

  app.onError((error, c) => {
    if (error instanceof HTTPException && error.status === 403) {
      return html(
        c,
        <MessagePage
          nonce={c.get("secureHeadersNonce") ?? ""}
          title="Form refused"
          message="This form was not sent from the settings page. Reload the page and try again."
        />,
        403,
      );
    }
    deps.logger.error({ err: { message: errorText(error) } }, "settings page failed");
    return c.html("<!doctype html><p>Something went wrong; the error was logged.</p>", 500);
  });

  guardSettings(app, deps);

  // Whether the page's session still holds: the page asks before it sends a form (layout.tsx),
  // and the guard answers 401 when it does not.
  app.get("/session", (c) => c.body(null, 204));

  /** Every section's save messages by key (the redirect after a save carries the key). */
  const SAVED = Object.fromEntries(SECTIONS.flatMap((section) => Object.entries(section.saved)));

  /** The page with `sections`, each loaded now, and the shell's own reads. */
  const render = async (
    c: Context<Env>,
    sections: readonly SettingsSection[],
    extra: Pick<SettingsPageProps, "notice" | "typed" | "partial"> = {},
    status: 200 | 400 | 413 = 200,
  ) => {
    // Re-read: a save just before the render changed the row.
    const shop = (await shops.getShop(c.get("shop").shop)) ?? c.get("shop");
    let catalog: Promise<Catalog> | undefined;
    const ctx: SectionContext = {
      shop,
      deps,
      catalog: () => {
        catalog ??= service.catalog(shop);
        return catalog;
      },
    };
    const [withheld, ...loaded] = await Promise.all([
      service.protectedDataWithheld(shop),
      ...sections.map((section) => section.load(ctx)),
    ]);
    const embedded = c.get("embedded");
    return html(
      c,
      <SettingsPage
        shop={shop}
        protectedDataWithheld={withheld}
        sections={sections.flatMap((section, i) =>
          loaded[i] === null || loaded[i] === undefined ? [] : [{ section, data: loaded[i] }],
        )}
        {...extra}
        {...(embedded
          ? {
              embedded: {
                apiKey: deps.embedded.apiKey,
                appBridgeUrl: deps.embedded.appBridgeUrl,
                polarisUrl: deps.embedded.polarisUrl,
              },
            }
          : {})}
        nav={navOf(c)}
        nonce={c.get("secureHeadersNonce") ?? ""}
      />,
      status,
    );
  };

  app.get("/", (c) => {
    const saved = SAVED[c.req.query("saved") ?? ""];
    return render(c, SECTIONS, saved ? { notice: { kind: "success", ...saved } } : {});
  });

  // Inside the admin the page after a save is loaded with the token the form was sent with
  // (Shopify's tokens live a minute; the bounce page fetches a new one for a later reload).
  const saved = (c: Context<Env>, key: string) => {
    const hash = `#${SAVED[key]?.slot ?? ""}-title`;
    const embedded = c.get("embedded");
    if (embedded?.host) {
      return c.redirect(
        `${embeddedUrl("/settings", embedded, embedded.token, { saved: key })}${hash}`,
        303,
      );
    }
    return c.redirect(`/settings?saved=${key}${hash}`, 303);
  };

  for (const section of SECTIONS) {
    const kit: SectionKit = {
      refuse: (c, message, options = {}) =>
        render(
          c,
          [section],
          {
            notice: {
              kind: "error",
              message,
              slot: options.slot ?? section.id,
              fields: options.field === undefined ? [] : [options.field].flat(),
            },
            typed: options.typed ?? {},
            partial: true,
          },
          options.status ?? 400,
        ),
      saved,
    };
    section.actions(app, kit, deps);
  }
  registrationRoutes(app, deps);

  return app;
}
