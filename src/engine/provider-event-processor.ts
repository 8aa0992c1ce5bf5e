import type { Job } from "bullmq";
import type { Logger } from "pino";
import type { ClaimKind, ClaimRepository, ClaimRow } from "../features/claims/repository.ts";
import { errorText } from "../lib/redact.ts";
import {
  type ClaimFacts,
  classifyTopic,
  readClaim,
  readRegistration,
  unwrapEvent,
} from "../provider/events.ts";
import type { ProviderEventJobData } from "../queue/provider-event-queue.ts";
import { ShopifyTokenError } from "../shopify/admin-client.ts";
import { AdminGraphqlError, ShopNotConnectedError } from "../shopify/index.ts";
import type {
  ProviderEventRepository,
  ProviderEventRow,
  ShopRecord,
  ShopRepository,
} from "../store/index.ts";

/** The scope Shopify asks for to change an order's tags. */
export const TAG_SCOPE = "write_orders";
/** The tag a claim's status puts on its Shopify order. */
export const claimTag = (status: string) =>
  `protection-claim:${status.toLowerCase().replace(/[^a-z0-9_-]+/g, "-")}`.slice(0, 255);

export interface ProviderEventProcessorDeps {
  events: ProviderEventRepository;
  claims: ClaimRepository;
  shops: Pick<ShopRepository, "getShop">;
  /** Admin GraphQL for a shop (the order's tags). */
  shopifyAdmin: {
    for(shop: ShopRecord): {
      request<T>(query: string, variables?: Record<string, unknown>): Promise<{ data: T }>;
    };
  };
  logger: Logger;
  /**
   * Runs the tagging of one order alone (two events about one order's claims may be processed
   * at once, in two workers): its tags are read and written under this lock.
   */
  withOrderLock?: <T>(shop: string, sourceOrderId: string, work: () => Promise<T>) => Promise<T>;
}

/** Whether the shop granted a scope (Shopify's comma-separated list, as stored at install). */
export const hasScope = (shop: Pick<ShopRecord, "scopes">, scope: string) =>
  (shop.scopes ?? "")
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .includes(scope);

const TAGS_ADD = `#graphql
  mutation ConnectorClaimTagsAdd($id: ID!, $tags: [String!]!) {
    tagsAdd(id: $id, tags: $tags) { node { id } userErrors { field message } }
  }`;
const TAGS_REMOVE = `#graphql
  mutation ConnectorClaimTagsRemove($id: ID!, $tags: [String!]!) {
    tagsRemove(id: $id, tags: $tags) { node { id } userErrors { field message } }
  }`;

interface TagsPayload {
  node: { id: string } | null;
  userErrors: { field: string[] | null; message: string }[];
}

/**
 * The worker's side of the provider's events. Claims and shipping claims are kept per shop at
 * their newest status (an event older than what is stored changes nothing), mapped to the
 * Shopify order through the connector's links, and, when the shop asks and granted
 * `write_orders`, the order's `protection-claim:<status>` tag follows the status. Registration
 * events and events of unknown topics or shapes are kept as received and shown. Each event is
 * processed once: its row is marked with what was done.
 */
export function createProviderEventProcessor(deps: ProviderEventProcessorDeps) {
  return async (job: Job<ProviderEventJobData>) => processProviderEvent(deps, job.data.eventRowId);
}

export async function processProviderEvent(
  deps: ProviderEventProcessorDeps,
  eventRowId: number,
): Promise<string> {
  const event = await deps.events.get(eventRowId);
  if (!event) return "gone";
  if (event.processedAt !== null) return "already processed";
  const outcome = await outcomeOf(deps, event);
  await deps.events.markProcessed(event.id, outcome);
  return outcome;
}

async function outcomeOf(deps: ProviderEventProcessorDeps, event: ProviderEventRow) {
  let body: unknown;
  try {
    body = JSON.parse(event.payload);
  } catch {
    return "kept: the body is not JSON";
  }
  const envelope = unwrapEvent(body);
  const topic = classifyTopic(event.topic ?? envelope.topic);
  if (topic.kind === "unknown") {
    return `kept: unknown topic ${event.topic === null ? "(none)" : JSON.stringify(event.topic.slice(0, 80))}`;
  }
  if (!envelope.resource) return `kept: no ${topic.kind.replace("_", " ")} in the body`;
  if (topic.kind === "registration") {
    const facts = readRegistration(envelope.resource);
    return `registration ${facts.registrationId ?? "(no ID)"} ${topic.action ?? "received"}`;
  }
  const facts = readClaim(envelope.resource, topic.action);
  if (!facts) return `kept: no ${topic.kind.replace("_", " ")} ID in the body`;
  return applyClaim(deps, event, topic.kind, facts);
}

async function applyClaim(
  deps: ProviderEventProcessorDeps,
  event: ProviderEventRow,
  kind: ClaimKind,
  facts: ClaimFacts,
): Promise<string> {
  const space = { providerBaseUrl: event.providerBaseUrl, storeId: event.storeId };
  // The shop whose links know the order owns the claim; none: every shop bound to the store.
  const found: { shop: string; order: Awaited<ReturnType<ClaimRepository["findOrder"]>> }[] = [];
  for (const shop of event.shops) {
    const order = await deps.claims.findOrder(shop, space, facts);
    if (order) found.push({ shop, order });
  }
  const owners = found.length > 0 ? found : event.shops.map((shop) => ({ shop, order: null }));
  const notes: string[] = [];
  for (const { shop, order } of owners) {
    const stored = await deps.claims.applyIfNewer({
      shop,
      kind,
      claimId: facts.claimId,
      externalId: facts.externalId,
      status: facts.status,
      orderId: order?.orderId ?? facts.orderId,
      sourceOrderId: order?.sourceOrderId ?? null,
      orderName: order?.orderName ?? facts.orderName,
      // Without the provider's time, the time we first stored this body: never the timestamp
      // header, which is not signed (a replay with a fresh one would make an old status win),
      // and a replay of these bytes is a duplicate, never stored again.
      updatedOn: facts.updatedOn ?? event.receivedAt,
      eventId: event.eventId,
    });
    const label = `${kind.replace("_", " ")} ${facts.claimId}`;
    if (!stored) {
      notes.push(`${shop}: ${label} older than the stored state; ignored`);
      continue;
    }
    const orderOf = stored.sourceOrderId;
    const lock = deps.withOrderLock ?? ((_s, _o, work) => work());
    const tagged = orderOf ? await lock(shop, orderOf, () => tagOrder(deps, shop, orderOf)) : "";
    notes.push(
      `${shop}: ${label} ${stored.status ?? "(no status)"}${stored.sourceOrderId ? ` on order ${stored.orderName ?? stored.sourceOrderId}` : ", order not linked"}${tagged}`,
    );
  }
  return notes.length > 0 ? notes.join("; ") : "kept: no shop is bound to the store";
}

/**
 * Tags again the shop's orders whose claims' tags Shopify refused (the app's token refused, the
 * scope revoked), once the merchant has reconnected the shop or granted the scope: otherwise
 * they waited for their claims' next event. An order whose tags are being changed meanwhile is
 * left to that change. Answers how many orders were tried and how many are still not tagged.
 */
export async function retagOrders(
  deps: Omit<ProviderEventProcessorDeps, "events">,
  shop: string,
): Promise<{ tried: number; untagged: number }> {
  const orders = await deps.claims.ordersNotTagged(shop);
  const lock = deps.withOrderLock ?? ((_s, _o, work) => work());
  let untagged = 0;
  for (const sourceOrderId of orders) {
    try {
      const note = await lock(shop, sourceOrderId, () => tagOrder(deps, shop, sourceOrderId));
      if (note.startsWith("; not tagged")) untagged++;
    } catch (error) {
      untagged++;
      deps.logger.warn(
        { shop, sourceOrderId, err: { message: errorText(error) } },
        "claim tags not applied again; the claim's next event tries again",
      );
    }
  }
  return { tried: orders.length, untagged };
}

/**
 * Brings the order's `protection-claim:` tags in line with its claims' statuses (an order may
 * have several claims): adds the missing, removes those no claim holds any more. Returns a note
 * for the event's outcome. Refusals that retrying will not fix (scope revoked, the shop
 * uninstalled, an Admin API error) are recorded on the claims; a throttle or an outage throws,
 * so the job retries.
 */
async function tagOrder(
  deps: Omit<ProviderEventProcessorDeps, "events">,
  shopDomain: string,
  sourceOrderId: string,
): Promise<string> {
  if (!(await deps.claims.tagsOrders(shopDomain))) return "";
  const shop = await deps.shops.getShop(shopDomain);
  const claims = await deps.claims.claimsOfOrder(shopDomain, sourceOrderId);
  const fail = async (reason: string) => {
    await deps.claims.setTagged(shopDomain, claims.map(keyOf), reason);
    return `; not tagged: ${reason}`;
  };
  if (!shop || shop.status === "uninstalled") return fail("the app is not installed on the shop");
  if (!hasScope(shop, TAG_SCOPE))
    return fail(`the shop has not granted ${TAG_SCOPE}, which tagging orders needs`);
  const desired = new Set(claims.flatMap((c) => (c.status ? [claimTag(c.status)] : [])));
  const applied = new Set(
    claims.flatMap((c) => (c.taggedStatus ? [claimTag(c.taggedStatus)] : [])),
  );
  const add = [...desired].filter((t) => !applied.has(t));
  const remove = [...applied].filter((t) => !desired.has(t));
  const id = `gid://shopify/Order/${sourceOrderId}`;
  try {
    const admin = deps.shopifyAdmin.for(shop);
    for (const [query, tags, field] of [
      [TAGS_ADD, add, "tagsAdd"],
      [TAGS_REMOVE, remove, "tagsRemove"],
    ] as const) {
      if (tags.length === 0) continue;
      const { data } = await admin.request<Record<string, TagsPayload>>(query, { id, tags });
      const problem = data[field]?.userErrors[0];
      if (problem) return fail(`Shopify refused ${field}: ${problem.message}`);
    }
  } catch (error) {
    if (
      error instanceof AdminGraphqlError ||
      error instanceof ShopNotConnectedError ||
      error instanceof ShopifyTokenError
    ) {
      deps.logger.warn(
        { shop: shopDomain, err: { message: errorText(error) } },
        "claim tag not applied",
      );
      return fail(error.message.slice(0, 300));
    }
    throw error;
  }
  await deps.claims.setTagged(
    shopDomain,
    claims.map((c) => ({ ...keyOf(c), taggedStatus: c.status })),
    null,
  );
  return add.length + remove.length > 0
    ? `; tags${add.length ? ` +${add.join(",")}` : ""}${remove.length ? ` -${remove.join(",")}` : ""}`
    : "";
}

const keyOf = (c: ClaimRow) => ({
  kind: c.kind,
  claimId: c.claimId,
  taggedStatus: c.taggedStatus,
});
