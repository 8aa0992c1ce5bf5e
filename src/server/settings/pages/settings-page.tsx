import type { VerifiedStore } from "../../../provider/verify-credentials.ts";
import type {
  BackfillView,
  Catalog,
  CatalogImportView,
  ClaimsView,
  StatusView,
} from "../../../settings/index.ts";
import type { ShopRecord } from "../../../store/index.ts";
import type { EmbeddedParams } from "../../install/embedded.ts";
import { BackfillSection } from "./backfill-section.tsx";
import { CatalogSection } from "./catalog-section.tsx";
import { ClaimsSection } from "./claims-section.tsx";
import { type EmbeddedAssets, Layout } from "./layout.tsx";
import { LocationsSection } from "./locations-section.tsx";
import { Notice, type NoticeProps } from "./notice.tsx";
import { ProtectionSection } from "./protection-section.tsx";
import { ProviderSection } from "./provider-section.tsx";
import { StatusSection } from "./status-section.tsx";
import { TestOrdersSection } from "./test-orders-section.tsx";

export interface SettingsPageProps {
  shop: ShopRecord;
  stores: VerifiedStore[] | null;
  catalog: Catalog;
  status: StatusView;
  backfill: BackfillView | null;
  backfillAvailable: boolean;
  resyncAvailable: boolean;
  /** Products outside Shopify: the last import, and whether uploads are possible. */
  catalogImport?: { last: CatalogImportView | null; available: boolean; maxBytes: number };
  /** Test orders not sent (the shop's setting). */
  testOrdersSkipped: number;
  /** The provider's claims and events (null where the composition has none). */
  claims?: ClaimsView | null;
  /** A message about the last action, and which section it belongs to. */
  notice?: NoticeProps & { section: string };
  /** Values typed into a form that was refused, to show them again (never a secret). */
  typed?: { clientId?: string; environment?: string; since?: string; orderName?: string };
  nonce: string;
  /** Inside the Shopify admin: App Bridge, Polaris and the form signing script. */
  embedded?: EmbeddedAssets;
  /** Inside the Shopify admin: what the tab links keep. */
  nav?: EmbeddedParams | undefined;
}

const noticeFor = (props: SettingsPageProps, section: string) =>
  props.notice?.section === section ? <Notice {...props.notice} /> : null;

function ShopState(props: { shop: ShopRecord }) {
  const { shop } = props;
  if (shop.status === "active") {
    return <Notice kind="success" message="Orders are syncing to the provider." />;
  }
  if (shop.status === "uninstalled") {
    return (
      <Notice kind="warning" message="The app was uninstalled from this shop: nothing syncs." />
    );
  }
  return (
    <Notice kind="warning" message={`Sync is paused: ${shop.pausedReason ?? "no reason given"}.`} />
  );
}

/** The merchant's one page: connection, store, protection, locations, backfill, status. */
export function SettingsPage(props: SettingsPageProps) {
  const { shop } = props;
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
      {shop.subscriptionsError ? (
        <Notice
          kind="warning"
          message={`Shopify's order webhooks could not be set up for this shop (${shop.subscriptionsError}). The connector tries again at its next start and in each hourly check; until then orders arrive only through those checks.`}
        />
      ) : null}
      {props.status.protectedDataWithheld > 0 ? (
        <Notice
          kind="warning"
          message={`${props.status.protectedDataWithheld} ${props.status.protectedDataWithheld === 1 ? "order was" : "orders were"} not sent: Shopify withholds customers' names, emails, phones and addresses from this app until it is approved for protected customer data, and the provider needs an email or a phone. The app's developer requests access in the Partner Dashboard; the orders sync once it is granted and they are retried.`}
        />
      ) : null}
      <ProviderSection
        shop={shop}
        stores={props.stores}
        notice={noticeFor(props, "provider")}
        storeNotice={noticeFor(props, "store")}
        typed={props.typed}
      />
      <ProtectionSection
        shop={shop}
        catalog={props.catalog}
        notice={noticeFor(props, "protection")}
      />
      <LocationsSection
        shop={shop}
        catalog={props.catalog}
        notice={noticeFor(props, "locations")}
      />
      <TestOrdersSection
        shop={shop}
        skipped={props.testOrdersSkipped}
        notice={noticeFor(props, "test-orders")}
      />
      <BackfillSection
        shop={shop}
        backfill={props.backfill}
        available={props.backfillAvailable}
        notice={noticeFor(props, "backfill")}
        since={props.typed?.since}
        nonce={props.nonce}
      />
      {props.catalogImport ? (
        <CatalogSection {...props.catalogImport} notice={noticeFor(props, "catalog")} />
      ) : null}
      <StatusSection
        status={props.status}
        resyncAvailable={props.resyncAvailable}
        notice={noticeFor(props, "resync")}
        orderName={props.typed?.orderName}
      />
      {props.claims ? (
        <ClaimsSection
          view={props.claims}
          notice={noticeFor(props, "claims")}
          embedded={props.embedded !== undefined}
          nonce={props.nonce}
        />
      ) : null}
    </Layout>
  );
}
