import type { EmbeddedParams } from "../../server/install/embedded.ts";
import { type EmbeddedAssets, Layout } from "../../server/settings/pages/layout.tsx";
import { Notice, type NoticeProps } from "../../server/settings/pages/notice.tsx";
import { settingsHref } from "../../server/settings/pages/tabs.tsx";
import { type RegistrationPage, registrationRow } from "./index.ts";
import type { RegistrationEventView } from "./settings.ts";

/** Rows per page the tab offers; the provider answers at most 100 (4.2). */
export const PAGE_SIZES = [10, 25, 50, 100] as const;
export const DEFAULT_PAGE_SIZE = 25;

/** What the merchant asked for, as typed (shown again in the form). */
export interface RegistrationsQuery {
  size: number;
  email: string;
  channel: string;
  externalId: string;
}

export interface RegistrationsPageProps {
  shop: string;
  query: RegistrationsQuery;
  /** The page to show; null when nothing could be read (the notice says why). */
  page: RegistrationPage | null;
  notice?: NoticeProps & { fix?: { href: string; label: string } };
  nonce: string;
  embedded?: EmbeddedAssets | undefined;
  nav?: EmbeddedParams | undefined;
  /** The latest registration events the provider's webhooks reported, newest first. */
  reported?: RegistrationEventView[];
}

/** The filters every link of the tab keeps (page size, email, channel, external ID). */
function kept(q: RegistrationsQuery) {
  return { size: q.size, email: q.email, channel: q.channel, externalId: q.externalId };
}

/** The Registrations tab: the provider's list, a page at a time, and the CSV of it all. */
export function RegistrationsPage(props: RegistrationsPageProps) {
  const { query, page, nav } = props;
  const filtered = query.email !== "" || query.channel !== "" || query.externalId !== "";
  return (
    <Layout
      title="Registrations"
      shop={props.shop}
      nonce={props.nonce}
      embedded={props.embedded}
      tab="registrations"
      nav={nav}
    >
      <section aria-labelledby="registrations-title">
        <h2 id="registrations-title">Product registrations</h2>
        <p class="hint">
          Products your customers registered with your shipping-protection provider, newest first.
        </p>
        {props.notice ? (
          <>
            <Notice kind={props.notice.kind} message={props.notice.message} />
            {props.notice.fix ? (
              <p>
                <a href={props.notice.fix.href}>{props.notice.fix.label}</a>
              </p>
            ) : null}
          </>
        ) : null}
        <form method="get" action="/settings/registrations" class="filters">
          {nav ? (
            <>
              <input type="hidden" name="embedded" value="1" />
              <input type="hidden" name="shop" value={nav.shop} />
              <input type="hidden" name="host" value={nav.host} />
            </>
          ) : null}
          <div>
            <label for="email">Customer email</label>
            <input type="text" id="email" name="email" value={query.email} autocomplete="off" />
          </div>
          <div>
            <label for="channel">Channel</label>
            <input type="text" id="channel" name="channel" value={query.channel} />
          </div>
          <div>
            <label for="externalId">External ID</label>
            <input type="text" id="externalId" name="externalId" value={query.externalId} />
          </div>
          <div>
            <label for="size">Rows per page</label>
            <select id="size" name="size">
              {[...new Set([...PAGE_SIZES, query.size])]
                .sort((a, b) => a - b)
                .map((n) => (
                  <option value={String(n)} selected={n === query.size}>
                    {n}
                  </option>
                ))}
            </select>
          </div>
          <div>
            <button type="submit" class="secondary">
              Show
            </button>
          </div>
        </form>
        {props.reported && props.reported.length > 0 ? (
          <ReportedRegistrations events={props.reported} />
        ) : null}
        {page ? <RegistrationsTable page={page} filtered={filtered} /> : null}
        {page ? (
          <div class="pager">
            {page.previous ? (
              <a
                class="button"
                rel="prev"
                href={settingsHref(
                  "/settings/registrations",
                  { ...kept(query), before: page.previous },
                  nav,
                )}
              >
                Previous
              </a>
            ) : null}
            {page.next ? (
              <a
                class="button"
                rel="next"
                href={settingsHref(
                  "/settings/registrations",
                  { ...kept(query), after: page.next },
                  nav,
                )}
              >
                Next
              </a>
            ) : null}
            <a
              class="button"
              href={settingsHref(
                "/settings/registrations.csv",
                { email: query.email, channel: query.channel, externalId: query.externalId },
                nav,
              )}
            >
              {filtered ? "Download these registrations (CSV)" : "Download all registrations (CSV)"}
            </a>
          </div>
        ) : null}
      </section>
    </Layout>
  );
}

/** The provider's latest registration events (its webhooks), as they arrived. */
function ReportedRegistrations(props: { events: RegistrationEventView[] }) {
  return (
    <div data-reported-registrations>
      <h3>Just reported by the provider</h3>
      <ul>
        {props.events.map((e) => (
          <li>
            {e.externalId ?? e.registrationId ?? "a registration"}:{" "}
            {(e.topic ?? "registration").replace(/^registrations?[/._:-]/i, "")},{" "}
            {e.receivedAt.slice(0, 16).replace("T", " ")} UTC
          </li>
        ))}
      </ul>
    </div>
  );
}

function RegistrationsTable(props: { page: RegistrationPage; filtered: boolean }) {
  const rows = props.page.registrations.map(registrationRow);
  if (rows.length === 0) {
    return (
      <p class="muted">
        {props.filtered ? "No registrations match these filters." : "No registrations yet."}
      </p>
    );
  }
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th scope="col">External ID</th>
            <th scope="col">Customer</th>
            <th scope="col">Email</th>
            <th scope="col">Channel</th>
            <th scope="col">Items</th>
            <th scope="col">Created</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr>
              <td>{r.externalId}</td>
              <td>{r.customer}</td>
              <td>{r.email}</td>
              <td>{r.channel}</td>
              <td>{r.items}</td>
              <td>{r.created}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
