import type { Context, Hono } from "hono";
import { settingsHref } from "../../server/settings/pages/tabs.tsx";
import {
  type Env,
  html,
  navOf,
  type SettingsRouteDeps,
} from "../../server/settings/settings-guard.tsx";
import {
  type RegistrationFilters,
  RegistrationReader,
  RegistrationsUnavailableError,
  registrationCsvHeader,
  registrationCsvRow,
} from "./index.ts";
import {
  DEFAULT_PAGE_SIZE,
  RegistrationsPage,
  type RegistrationsPageProps,
  type RegistrationsQuery,
} from "./page.tsx";

const FIELD_LIMITS = { email: 254, channel: 100, externalId: 100 } as const;
const CURSOR_LIMIT = 1_000;

type Parsed =
  | {
      ok: true;
      query: RegistrationsQuery;
      after: string | undefined;
      before: string | undefined;
    }
  | { ok: false; query: RegistrationsQuery; message: string };

/** The tab's query string, checked: one message naming the field when something is off. */
function parseQuery(c: Context<Env>): Parsed {
  const text = (name: string) => (c.req.query(name) ?? "").trim();
  const rawSize = text("size");
  const size = rawSize === "" ? DEFAULT_PAGE_SIZE : Number(rawSize);
  const query: RegistrationsQuery = {
    size: Number.isSafeInteger(size) && size >= 1 && size <= 100 ? size : DEFAULT_PAGE_SIZE,
    email: text("email"),
    channel: text("channel"),
    externalId: text("externalId"),
  };
  if (!Number.isSafeInteger(size) || size < 1 || size > 100) {
    return { ok: false, query, message: "Rows per page must be a whole number from 1 to 100." };
  }
  const labels = { email: "Customer email", channel: "Channel", externalId: "External ID" };
  for (const [field, limit] of Object.entries(FIELD_LIMITS) as [keyof typeof labels, number][]) {
    if (query[field].length > limit) {
      return {
        ok: false,
        query: { ...query, [field]: "" },
        message: `${labels[field]} is too long (at most ${limit} characters).`,
      };
    }
  }
  const after = c.req.query("after") || undefined;
  const before = c.req.query("before") || undefined;
  if (after && before) {
    return { ok: false, query, message: "A page link has either after or before, not both." };
  }
  if ((after ?? before ?? "").length > CURSOR_LIMIT) {
    return { ok: false, query, message: "This page link is not valid: start from the first page." };
  }
  return { ok: true, query, after, before };
}

const filtersOf = (q: RegistrationsQuery): RegistrationFilters => ({
  ...(q.email ? { customerEmail: q.email } : {}),
  ...(q.channel ? { channelName: q.channel } : {}),
  ...(q.externalId ? { externalId: q.externalId } : {}),
});

/**
 * The Registrations tab (GET /settings/registrations) and its CSV (GET
 * /settings/registrations.csv), behind the settings guard: the shop is the session's, never
 * the request's. Pages follow the provider's cursors (Next: `after`, Previous: `before`); the
 * CSV streams every page of the filtered list. Not configured, or the provider failing: one
 * line saying so and what to do, never a stack.
 */
export function registrationRoutes(app: Hono<Env>, deps: SettingsRouteDeps) {
  const page = (c: Context<Env>, props: Omit<RegistrationsPageProps, "shop" | "nonce">) =>
    ({
      ...props,
      shop: c.get("shop").shop,
      nonce: c.get("secureHeadersNonce") ?? "",
      nav: navOf(c),
      ...(c.get("embedded")
        ? {
            embedded: {
              apiKey: deps.embedded.apiKey,
              appBridgeUrl: deps.embedded.appBridgeUrl,
              polarisUrl: deps.embedded.polarisUrl,
            },
          }
        : {}),
    }) satisfies RegistrationsPageProps;

  /** Why the shop cannot read registrations, with the way to fix it; or null. */
  const unavailable = (c: Context<Env>, query: RegistrationsQuery) => {
    const reader = deps.service.registrations;
    if (!reader) {
      return page(c, {
        query,
        page: null,
        notice: {
          kind: "warning",
          message: "Registrations are not available in this installation.",
        },
      });
    }
    const problem = RegistrationReader.problem(c.get("shop"));
    if (!problem) return null;
    return page(c, {
      query,
      page: null,
      notice: {
        kind: "warning",
        message: problem,
        fix: {
          href: `${settingsHref("/settings", {}, navOf(c))}#provider-title`,
          label: "Go to Settings → Provider connection",
        },
      },
    });
  };

  const failed = (c: Context<Env>, query: RegistrationsQuery, error: unknown) => {
    if (!(error instanceof RegistrationsUnavailableError)) throw error;
    const fix =
      error.reason === "cursor"
        ? {
            href: settingsHref(
              "/settings/registrations",
              {
                size: query.size,
                email: query.email,
                channel: query.channel,
                externalId: query.externalId,
              },
              navOf(c),
            ),
            label: "First page",
          }
        : error.reason === "credentials"
          ? {
              href: `${settingsHref("/settings", {}, navOf(c))}#provider-title`,
              label: "Go to Settings → Provider connection",
            }
          : undefined;
    return html(
      c,
      <RegistrationsPage
        {...page(c, {
          query,
          page: null,
          notice: { kind: "error", message: error.message, ...(fix ? { fix } : {}) },
        })}
      />,
      error.reason === "busy" ? 503 : error.reason === "cursor" ? 400 : 502,
    );
  };

  /**
   * The query read and the shop's provider checked, for the page and the CSV alike: the reader
   * and the query, or the page that says what is wrong.
   */
  const prepare = (c: Context<Env>) => {
    c.header("Cache-Control", "no-store");
    const parsed = parseQuery(c);
    if (!parsed.ok) {
      return {
        refused: html(
          c,
          <RegistrationsPage
            {...page(c, {
              query: parsed.query,
              page: null,
              notice: { kind: "error", message: parsed.message },
            })}
          />,
          400,
        ),
      };
    }
    const blocked = unavailable(c, parsed.query);
    if (blocked) return { refused: html(c, <RegistrationsPage {...blocked} />) };
    const reader = deps.service.registrations as RegistrationReader;
    return { parsed, query: parsed.query, reader };
  };

  app.get("/registrations", async (c) => {
    const ready = prepare(c);
    if ("refused" in ready) return ready.refused;
    const { parsed, query, reader } = ready;
    try {
      const [result, reported] = await Promise.all([
        reader.page(c.get("shop"), {
          ...filtersOf(query),
          size: query.size,
          after: parsed.after,
          before: parsed.before,
        }),
        // What the provider's webhooks reported last (POST /webhooks/provider).
        deps.registrationEvents ? deps.registrationEvents.recent(c.get("shop")) : [],
      ]);
      return html(c, <RegistrationsPage {...page(c, { query, page: result, reported })} />);
    } catch (error) {
      return failed(c, query, error);
    }
  });

  app.get("/registrations.csv", async (c) => {
    const ready = prepare(c);
    if ("refused" in ready) return ready.refused;
    const { query, reader } = ready;
    const shop = c.get("shop");
    const rows = reader.list(shop, filtersOf(query))[Symbol.asyncIterator]();
    // The first page before the answer: a provider that fails now gets a page saying so.
    let first: IteratorResult<Parameters<typeof registrationCsvRow>[0]>;
    try {
      first = await rows.next();
    } catch (error) {
      return failed(c, query, error);
    }
    const encoder = new TextEncoder();
    // Pulled as the download reads it; a failure later breaks the download (the browser says it
    // failed) rather than end it as if complete.
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        // The BOM tells spreadsheets the file is UTF-8.
        controller.enqueue(encoder.encode(`\uFEFF${registrationCsvHeader()}`));
        if (!first.done) controller.enqueue(encoder.encode(registrationCsvRow(first.value)));
        if (first.done) controller.close();
      },
      async pull(controller) {
        try {
          const next = await rows.next();
          if (next.done) controller.close();
          else controller.enqueue(encoder.encode(registrationCsvRow(next.value)));
        } catch (error) {
          deps.logger.warn(
            { shop: shop.shop, reason: (error as RegistrationsUnavailableError).reason },
            "registrations CSV cut short: the provider failed during the download",
          );
          // The connection is dropped, so the download ends unfinished. Under @hono/node-server
          // that is the response's own socket (erroring the stream would also print the error
          // and its stack to stderr, beside the log); elsewhere the stream's error does it.
          const outgoing = (c.env as { outgoing?: { destroy(): void } } | undefined)?.outgoing;
          if (outgoing) outgoing.destroy();
          else controller.error(error);
        }
      },
      async cancel() {
        await rows.return?.(undefined);
      },
    });
    const day = new Date().toISOString().slice(0, 10);
    const name = `registrations-${shop.shop.replace(/\.myshopify\.com$/, "")}-${day}.csv`;
    return c.body(body, 200, {
      "Content-Type": "text/csv; charset=utf-8",
      "Content-Disposition": `attachment; filename="${name}"`,
    });
  });
}
