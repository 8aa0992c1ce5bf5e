import {
  blob,
  index,
  integer,
  primaryKey,
  sqliteTable,
  text,
  uniqueIndex,
} from "drizzle-orm/sqlite-core";

/**
 * The connector's durable state. Timestamps are ISO 8601 text, JSON is text, IDs are integers
 * or decimal text: nothing here is SQLite-only, so a Postgres schema can follow one to one.
 */

export const shops = sqliteTable("shops", {
  shop: text("shop").primaryKey(),
  status: text("status", { enum: ["active", "paused", "uninstalled"] })
    .notNull()
    .default("active"),
  pausedReason: text("paused_reason"),
  storeId: integer("store_id"),
  providerEnvironment: text("provider_environment", { enum: ["production", "staging", "sandbox"] })
    .notNull()
    .default("sandbox"),
  providerBaseUrl: text("provider_base_url"),
  providerAuthUrl: text("provider_auth_url"),
  providerAudience: text("provider_audience"),
  providerClientId: text("provider_client_id"),
  providerClientSecretSealed: text("provider_client_secret_sealed"),
  accessTokenSealed: text("access_token_sealed"),
  /** An expiring offline token's end (null: a non-expiring token) and when to refresh it. */
  accessTokenExpiresAt: text("access_token_expires_at"),
  accessTokenRefreshAt: text("access_token_refresh_at"),
  refreshTokenSealed: text("refresh_token_sealed"),
  refreshTokenExpiresAt: text("refresh_token_expires_at"),
  scopes: text("scopes"),
  storeCurrency: text("store_currency"),
  shopCurrency: text("shop_currency"),
  /** The shop's IANA time zone, from shop/update (and the install). */
  shopTimezone: text("shop_timezone"),
  /** Orders Shopify marks `test: true` are sent only when the merchant asks (default: not). */
  sendTestOrders: integer("send_test_orders", { mode: "boolean" }).notNull().default(false),
  protectionVariantIds: text("protection_variant_ids").notNull().default("[]"),
  locationMap: text("location_map").notNull().default("{}"),
  defaultLocationId: integer("default_location_id"),
  installedAt: text("installed_at"),
  uninstalledAt: text("uninstalled_at"),
  /** When every webhook subscription was last seen in place (the start of a gap to resync). */
  subscriptionsCheckedAt: text("subscriptions_checked_at"),
  /** Why the last webhook subscription check failed (null when it succeeded). */
  subscriptionsError: text("subscriptions_error"),
  createdAt: text("created_at").notNull(),
  updatedAt: text("updated_at").notNull(),
});

export const orderLinks = sqliteTable(
  "order_links",
  {
    shop: text("shop").notNull(),
    sourceOrderId: text("source_order_id").notNull(),
    storeId: integer("store_id").notNull(),
    /**
     * The provider environment the order lives in (its API base URL): with store_id, the link
     * space. Null for links made before spaces were recorded, which count as the shop's current.
     */
    providerBaseUrl: text("provider_base_url"),
    orderId: integer("order_id").notNull(),
    orderName: text("order_name"),
    orderHash: text("order_hash").notNull(),
    syncedVersion: text("synced_version"),
    canceledAt: text("canceled_at"),
    lastResult: text("last_result", { enum: ["synced", "failed", "dead-lettered"] }),
    lastError: text("last_error"),
    lastSyncedAt: text("last_synced_at"),
    /** The trace ID of the order's last sync, when traces were on (`connector orders show`). */
    lastTraceId: text("last_trace_id"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.shop, t.sourceOrderId] }),
    index("order_links_name").on(t.shop, t.orderName),
    // A create's check that the provider did not hand out an ID another link holds.
    index("order_links_provider_order").on(t.orderId),
  ],
);

/**
 * Links retired from use: the shop switched provider store or environment, or the provider no
 * longer had the order. Kept for the record (which provider order an order was once sent to);
 * never read to write.
 */
export const retiredOrderLinks = sqliteTable(
  "retired_order_links",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    shop: text("shop").notNull(),
    sourceOrderId: text("source_order_id").notNull(),
    providerBaseUrl: text("provider_base_url"),
    storeId: integer("store_id").notNull(),
    orderId: integer("order_id").notNull(),
    orderName: text("order_name"),
    reason: text("reason").notNull(),
    retiredAt: text("retired_at").notNull(),
  },
  (t) => [index("retired_order_links_order").on(t.shop, t.sourceOrderId)],
);

/**
 * Orders kept out of the provider on purpose, counted on the settings page and explained by
 * `connector orders show`: test orders (the shop's setting) and, by `reason`, orders sold without
 * an address with nothing to ship (a point-of-sale sale). The table's name is from when it held
 * test orders only.
 */
export const skippedTestOrders = sqliteTable(
  "skipped_test_orders",
  {
    shop: text("shop").notNull(),
    sourceOrderId: text("source_order_id").notNull(),
    skippedAt: text("skipped_at").notNull(),
    /** The order's name (#1001); null on rows written before names were kept. */
    orderName: text("order_name"),
    /** Why: `test` (the shop's test-order setting) or `no-address` (nothing ships). */
    reason: text("reason").notNull().default("test"),
    /**
     * The order's Shopify `updated_at` when it was last kept out: the reconciliation sweep leaves
     * an order alone at that version. Null on rows written before it was kept.
     */
    shopifyUpdatedAt: text("shopify_updated_at"),
  },
  (t) => [
    primaryKey({ columns: [t.shop, t.sourceOrderId] }),
    index("skipped_test_orders_name").on(t.shop, t.orderName),
  ],
);

/** Orders whose sync failed before the provider had them: no order_links row exists yet. */
export const orderFailures = sqliteTable(
  "order_failures",
  {
    shop: text("shop").notNull(),
    sourceOrderId: text("source_order_id").notNull(),
    /** The order's name (#1077) when the failure happened after its state was read. */
    orderName: text("order_name"),
    /**
     * `discarded`: dead-lettered, and its entry discarded by an operator, so that the entries
     * restored from here after Redis lost them (ops/dead-letter-restore.ts) leave it out.
     * Everywhere else it reads as `dead-lettered`: the order is still not at the provider.
     */
    result: text("result", { enum: ["failed", "dead-lettered", "discarded"] }).notNull(),
    error: text("error").notNull(),
    /** The failure's category (the dead-letter queue's `FailureCategory`); null before 0008. */
    category: text("category"),
    /**
     * JSON: the fields the failure names, `[{ path, ref? }]` (`ref`: the Shopify ID a field
     * points at, such as an unmapped location). Field paths and IDs only, never customer data.
     */
    fields: text("fields"),
    failedAt: text("failed_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.shop, t.sourceOrderId] })],
);

export const lineItemLinks = sqliteTable(
  "line_item_links",
  {
    shop: text("shop").notNull(),
    sourceOrderId: text("source_order_id").notNull(),
    lineItemId: integer("line_item_id").notNull(),
    sourceLineItemId: text("source_line_item_id").notNull(),
    hash: text("hash").notNull(),
    canceledAt: text("canceled_at"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.shop, t.sourceOrderId, t.lineItemId] })],
);

export const fulfillmentLinks = sqliteTable(
  "fulfillment_links",
  {
    shop: text("shop").notNull(),
    sourceOrderId: text("source_order_id").notNull(),
    sourceFulfillmentId: text("source_fulfillment_id").notNull(),
    fulfillmentId: integer("fulfillment_id").notNull(),
    hash: text("hash").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.shop, t.sourceOrderId, t.sourceFulfillmentId] })],
);

export const intents = sqliteTable(
  "intents",
  {
    shop: text("shop").notNull(),
    sourceOrderId: text("source_order_id").notNull(),
    key: text("key").notNull(),
    kind: text("kind").notNull(),
    status: text("status", { enum: ["pending", "done"] }).notNull(),
    resultId: integer("result_id"),
    attempts: integer("attempts").notNull().default(1),
    startedAt: text("started_at").notNull(),
    completedAt: text("completed_at"),
  },
  (t) => [primaryKey({ columns: [t.shop, t.sourceOrderId, t.key] })],
);

export const backfills = sqliteTable("backfills", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  shop: text("shop").notNull(),
  since: text("since"),
  until: text("until"),
  cursor: text("cursor"),
  done: integer("done").notNull().default(0),
  total: integer("total"),
  status: text("status", { enum: ["running", "paused", "completed", "failed"] }).notNull(),
  error: text("error"),
  startedAt: text("started_at").notNull(),
  updatedAt: text("updated_at").notNull(),
  completedAt: text("completed_at"),
});

export const syncCheckpoints = sqliteTable("sync_checkpoints", {
  shop: text("shop").primaryKey(),
  lastReconciledAt: text("last_reconciled_at").notNull(),
});

export const privacyRequests = sqliteTable("privacy_requests", {
  id: integer("id").primaryKey({ autoIncrement: true }),
  shop: text("shop").notNull(),
  topic: text("topic").notNull(),
  /** Only IDs, never customer data. */
  summary: text("summary").notNull(),
  receivedAt: text("received_at").notNull(),
  dueBy: text("due_by").notNull(),
  completedAt: text("completed_at"),
});

/**
 * Shopify sessions, in the shape `@shopify/shopify-app-session-storage-drizzle` reads and writes
 * (its documented SQLite table). `accessToken` and `refreshToken` only ever hold values sealed by
 * the secret box: the connector wraps the library's storage (src/shopify/session-storage.ts).
 */
export const session = sqliteTable("session", {
  id: text("id").primaryKey(),
  shop: text("shop").notNull(),
  state: text("state").notNull(),
  isOnline: integer("isOnline", { mode: "boolean" }).notNull().default(false),
  scope: text("scope"),
  expires: text("expires"),
  accessToken: text("accessToken").notNull(),
  userId: blob("userId", { mode: "bigint" }),
  firstName: text("firstName"),
  lastName: text("lastName"),
  email: text("email"),
  accountOwner: integer("accountOwner", { mode: "boolean" }),
  locale: text("locale"),
  collaborator: integer("collaborator", { mode: "boolean" }),
  emailVerified: integer("emailVerified", { mode: "boolean" }),
  refreshToken: text("refreshToken"),
  refreshTokenExpires: text("refreshTokenExpires"),
});

/** One run (or resumed runs) of `connector products import`, or an upload on the settings page. */
export const productImports = sqliteTable(
  "product_imports",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    shop: text("shop").notNull(),
    storeId: integer("store_id").notNull(),
    providerBaseUrl: text("provider_base_url").notNull(),
    fileName: text("file_name").notNull(),
    /** sha256 of the file: the same file resumes an unfinished import. */
    digest: text("digest").notNull(),
    format: text("format", { enum: ["csv", "json"] }).notNull(),
    source: text("source", { enum: ["cli", "settings"] }).notNull(),
    /** Whether invalid and refused products were left out (--skip-invalid). */
    skipInvalid: integer("skip_invalid", { mode: "boolean" }).notNull().default(false),
    force: integer("force", { mode: "boolean" }).notNull().default(false),
    status: text("status", {
      enum: ["rejected", "pending", "running", "interrupted", "completed"],
    }).notNull(),
    error: text("error"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    finishedAt: text("finished_at"),
  },
  (t) => [index("product_imports_shop").on(t.shop, t.id)],
);

/** Each product of an import (a CSV row group or a JSON item): its body, outcome and ID. */
export const productImportRows = sqliteTable(
  "product_import_rows",
  {
    importId: integer("import_id").notNull(),
    position: integer("position").notNull(),
    line: integer("line").notNull(),
    handle: text("handle").notNull(),
    /** The write body (JSON), or null for an invalid product. */
    body: text("body"),
    bodyDigest: text("body_digest"),
    outcome: text("outcome", {
      enum: ["pending", "sent", "created", "updated", "unchanged", "invalid", "refused", "failed"],
    }).notNull(),
    /** Problems (invalid: [{line, field, message}]) or the refusal or failure, as JSON. */
    problems: text("problems"),
    productId: integer("product_id"),
    sentAt: text("sent_at"),
    doneAt: text("done_at"),
  },
  (t) => [primaryKey({ columns: [t.importId, t.position] })],
);

/**
 * The products the connector created at the provider, by handle, per shop and provider store:
 * the provider has no list endpoint, so `products list` reads this record.
 */
export const catalogProducts = sqliteTable(
  "catalog_products",
  {
    shop: text("shop").notNull(),
    storeId: integer("store_id").notNull(),
    providerBaseUrl: text("provider_base_url").notNull(),
    handle: text("handle").notNull(),
    productId: integer("product_id").notNull(),
    title: text("title"),
    status: text("status").notNull(),
    variants: integer("variants").notNull(),
    /** sha256 of the body last sent: an identical row is not sent again (unchanged). */
    bodyDigest: text("body_digest"),
    lastImportId: integer("last_import_id"),
    importedAt: text("imported_at").notNull(),
    deletedOn: text("deleted_on"),
  },
  (t) => [
    primaryKey({ columns: [t.shop, t.storeId, t.providerBaseUrl, t.handle] }),
    index("catalog_products_product").on(t.productId),
  ],
);
/**
 * The secret the provider signs its outbound webhooks with, per provider account: the
 * environment (API base URL) and the client ID, which several shops may share. Sealed.
 */
export const providerWebhookSecrets = sqliteTable(
  "provider_webhook_secrets",
  {
    providerBaseUrl: text("provider_base_url").notNull(),
    clientId: text("client_id").notNull(),
    secretSealed: text("secret_sealed").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.providerBaseUrl, t.clientId] })],
);

/**
 * Every verified delivery of the provider's webhooks, once per event ID (a replay finds its
 * row). Claim and registration payloads carry customer data: kept here, never logged.
 */
export const providerEvents = sqliteTable(
  "provider_events",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** The environment and store the event is about. */
    providerBaseUrl: text("provider_base_url").notNull(),
    storeId: integer("store_id").notNull(),
    eventId: text("event_id").notNull(),
    /** JSON: the shops bound to the store whose account's secret verified the delivery. */
    shops: text("shops").notNull(),
    /** As sent (null when neither the headers nor the body name one). */
    topic: text("topic"),
    kind: text("kind", { enum: ["claim", "shipping_claim", "registration", "unknown"] }).notNull(),
    apiVersion: text("api_version"),
    /** The delivery's timestamp header. */
    sentAt: text("sent_at").notNull(),
    receivedAt: text("received_at").notNull(),
    processedAt: text("processed_at"),
    /** What processing did, in words (no customer data). */
    outcome: text("outcome"),
    /**
     * The body as received; once redacted (a customer's privacy request, or older than the
     * retention period), only its IDs: `{"redacted": "<why>", "claimId": …}`.
     */
    payload: text("payload").notNull(),
    /** When the body was replaced by its IDs (null: the body is as received). */
    redactedAt: text("redacted_at"),
    /**
     * What the event is, whatever its delivery ID: SHA-256 of its kind, its claim's or
     * registration's ID and its `updatedOn` (null for rows stored before it was kept). A second
     * delivery of one event under a new ID is a duplicate.
     */
    identity: text("identity"),
    /** SHA-256 of the raw body: a replay (the signature covers only the body) is a duplicate. */
    bodySha256: text("body_sha256"),
  },
  (t) => [
    uniqueIndex("provider_events_event").on(t.providerBaseUrl, t.storeId, t.eventId),
    uniqueIndex("provider_events_identity").on(t.providerBaseUrl, t.storeId, t.identity),
    uniqueIndex("provider_events_body").on(t.providerBaseUrl, t.storeId, t.bodySha256),
    index("provider_events_store").on(t.providerBaseUrl, t.storeId, t.receivedAt),
    index("provider_events_received").on(t.receivedAt),
  ],
);

/** Claims and shipping claims per shop, at their newest known status. */
export const providerClaims = sqliteTable(
  "provider_claims",
  {
    shop: text("shop").notNull(),
    kind: text("kind", { enum: ["claim", "shipping_claim"] }).notNull(),
    claimId: text("claim_id").notNull(),
    externalId: text("external_id"),
    status: text("status"),
    /** The provider's order, and the Shopify order it maps to through the links. */
    orderId: integer("order_id"),
    sourceOrderId: text("source_order_id"),
    orderName: text("order_name"),
    /** The provider's time of this status (updatedOn, else when the event was first stored): orders events. */
    updatedOn: text("updated_on").notNull(),
    lastEventId: text("last_event_id").notNull(),
    /** The status whose `protection-claim:` tag the Shopify order carries (null: none yet). */
    taggedStatus: text("tagged_status"),
    /** Why the last tagging failed (null when it worked or was not asked for). */
    tagError: text("tag_error"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.shop, t.kind, t.claimId] }),
    index("provider_claims_order").on(t.shop, t.sourceOrderId),
  ],
);

/** A shop's claim settings: whether its Shopify orders get `protection-claim:<status>` tags. */
export const claimSettings = sqliteTable("claim_settings", {
  shop: text("shop").primaryKey(),
  tagOrders: integer("tag_orders", { mode: "boolean" }).notNull().default(false),
  updatedAt: text("updated_at").notNull(),
});
