import { SUBSCRIPTIONS_FAILING, shopStateInWords } from "../../../settings/index.ts";
import type { ShopRecord } from "../../../store/index.ts";
import type { EmbeddedParams } from "../../install/embedded.ts";
import type { FieldState, SettingsSection, Typed } from "../sections/section.ts";
import { type EmbeddedAssets, Layout } from "./layout.tsx";
import { Notice, type NoticeProps } from "./notice.tsx";
import { settingsHref } from "./tabs.tsx";

export interface SettingsPageProps {
  shop: ShopRecord;
  /** Orders dead-lettered because Shopify withholds the customer: said once, at the top. */
  protectedDataWithheld: number;
  /** The sections shown, in page order, each with what its loader read. */
  sections: { section: SettingsSection; data: unknown }[];
  /**
   * Some sections only (a refused form shows its own): the page says so and links to the
   * whole page.
   */
  partial?: boolean;
  /**
   * A message about the last action, the slot (section heading) it belongs to and, for a
   * refusal, the ids of the fields it is about.
   */
  notice?: NoticeProps & { slot: string; fields?: readonly string[] };
  typed?: Typed;
  nonce: string;
  /** Inside the Shopify admin: App Bridge, Polaris and the form signing script. */
  embedded?: EmbeddedAssets;
  /** Inside the Shopify admin: what the tab links keep. */
  nav?: EmbeddedParams | undefined;
}

function ShopState(props: { shop: ShopRecord }) {
  const { kind, message } = shopStateInWords(props.shop);
  return <Notice kind={kind} message={message} />;
}

/**
 * The merchant's one page: the shop's state and warnings at the top, then the sections
 * (connection, store, protection, locations, test orders, backfill, catalog, status, claims).
 */
export function SettingsPage(props: SettingsPageProps) {
  const { shop, protectedDataWithheld: withheld } = props;
  const errorId = props.notice ? `${props.notice.slot}-error` : undefined;
  const notice = (slot: string) =>
    props.notice?.slot === slot ? (
      <Notice kind={props.notice.kind} message={props.notice.message} id={errorId} />
    ) : null;
  const fields = props.notice?.kind === "error" ? (props.notice.fields ?? []) : [];
  const invalid = (field: string): FieldState =>
    fields.includes(field) && errorId
      ? {
          "aria-invalid": "true",
          "aria-describedby": errorId,
          ...(fields[0] === field ? { autofocus: true as const } : {}),
        }
      : {};
  return (
    <Layout
      title="Settings"
      shop={shop.shop}
      nonce={props.nonce}
      embedded={props.embedded}
      tab="settings"
      nav={props.nav}
    >
      <ShopState shop={shop} />
      {shop.subscriptionsError ? <Notice kind="warning" message={SUBSCRIPTIONS_FAILING} /> : null}
      {withheld > 0 ? (
        <Notice
          kind="warning"
          message={`${withheld} ${withheld === 1 ? "order was" : "orders were"} not sent: Shopify withholds customers' names, emails, phones and addresses from this app until it is approved for protected customer data, and the provider needs an email or a phone. The app's developer requests access in the Partner Dashboard; the orders sync once it is granted and they are retried.`}
        />
      ) : null}
      {props.partial ? (
        <p class="muted" data-partial>
          Only the section of the form you sent is shown.{" "}
          <a href={settingsHref("/settings", {}, props.nav)}>Show all settings</a>
        </p>
      ) : null}
      {props.sections.map(({ section, data }) => (
        <section.View
          title={section.title}
          data={data}
          shop={shop}
          notice={notice}
          invalid={invalid}
          typed={props.typed ?? {}}
          nonce={props.nonce}
          embedded={props.embedded !== undefined}
        />
      ))}
    </Layout>
  );
}
