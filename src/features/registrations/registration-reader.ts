import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import type { StoreRateLimiter } from "../../engine/limiter/index.ts";
import type { ProviderClients } from "../../engine/provider-clients.ts";
import {
  ProviderAuthError,
  ProviderConnectionError,
  ProviderError,
  ProviderNotFoundError,
  ProviderValidationError,
} from "../../provider/index.ts";
import {
  MAX_PAGE_SIZE,
  type Registration,
  type RegistrationList,
  type RegistrationQuery,
} from "../../provider/schemas.ts";
import type { ShopRecord } from "../../store/index.ts";

/** The provider's own filters (4.2); each is also checked on what comes back. */
export interface RegistrationFilters {
  customerEmail?: string | undefined;
  channelName?: string | undefined;
  externalId?: string | undefined;
}

/** One page, forward from `after` or backward from `before` (neither: the first page). */
export interface PageRequest extends RegistrationFilters {
  after?: string | undefined;
  before?: string | undefined;
  /** 1 to 100; the provider clamps larger values (4.2) and may answer fewer. */
  size: number;
}

/** A page as the settings tab shows it: its rows and where Next and Previous lead. */
export interface RegistrationPage {
  registrations: Registration[];
  /** The cursor for Next (`after`), or null when nothing follows. */
  next: string | null;
  /** The cursor for Previous (`before`), or null on the first page. */
  previous: string | null;
}

/** Newest first, every page, as far as `since` and `limit` say. */
export interface ListOptions extends RegistrationFilters {
  /** Epoch ms: registrations created before it are left out (and paging stops there). */
  since?: number | undefined;
  /** At most this many registrations. */
  limit?: number | undefined;
}

/** Why registrations cannot be shown: one line for the merchant, naming the fix. */
export class RegistrationsUnavailableError extends Error {
  override name = "RegistrationsUnavailableError";
  constructor(
    message: string,
    readonly reason:
      | "not-configured"
      | "credentials"
      | "busy"
      | "unreachable"
      | "cursor"
      | "provider",
  ) {
    super(message);
  }
}

export interface RegistrationReaderDeps {
  limiter: StoreRateLimiter;
  providers: Pick<ProviderClients, "for">;
  logger?: Logger | undefined;
}

export interface RegistrationReaderOptions {
  /**
   * The longest one page waits for its slot of the store's budget (bulk work's share: live
   * orders go first) or for a 429's Retry-After, before the read gives up saying the provider is
   * busy. The settings page waits seconds; the CLI waits minutes.
   */
  maxWaitMs?: number;
}

/**
 * A shop's product registrations, read from the provider. Every provider call goes through
 * {@link RegistrationReader.fetchPage}: the one place that knows how a page is fetched (the
 * shop's client, the store's rate limit at bulk priority, a 429's Retry-After, errors in words).
 * Paging is an async generator over either cursor: forward with `after`/`first`, backward with
 * `before`/`last`.
 *
 * Tolerant of the answers the interface leaves open (docs/provider-contract.md): a page shorter
 * than asked is not the end (only `hasNextPage` is), a provider that ignores `orderBy` is
 * noticed from `createdOn` (then `since` filters every page instead of stopping early), a
 * registration seen twice is shown once, the provider's filters are checked again here, and
 * `hasNextPage`/`hasPreviousPage` reported false in the direction not travelled (Relay) is
 * corrected from where the page was reached.
 */
export class RegistrationReader {
  readonly #deps: RegistrationReaderDeps;
  readonly #maxWaitMs: number;

  constructor(deps: RegistrationReaderDeps, options: RegistrationReaderOptions = {}) {
    this.#deps = deps;
    this.#maxWaitMs = options.maxWaitMs ?? 10_000;
  }

  /** Null when the shop can read registrations, else what to do first (for the merchant). */
  static problem(shop: ShopRecord): string | null {
    if (!shop.providerClientId || !shop.providerClientSecretSealed) {
      return "The provider connection is not set up yet: enter your client ID and secret under Settings → Provider connection, then choose your store.";
    }
    if (shop.storeId === null) {
      return "No provider store is chosen yet: choose your store under Settings → Provider connection.";
    }
    return null;
  }

  /**
   * One page of the list, newest first. Next is offered when the provider says more follow or
   * the page was reached backward (items after it exist: we came from them); Previous likewise.
   */
  async page(shop: ShopRecord, request: PageRequest): Promise<RegistrationPage> {
    const backward = request.before !== undefined;
    const list = await this.fetchPage(shop, {
      ...filtersOf(request),
      orderBy: "desc",
      ...(backward
        ? { before: request.before, last: request.size }
        : {
            first: request.size,
            ...(request.after !== undefined ? { after: request.after } : {}),
          }),
    });
    const { pageInfo } = list;
    const hasNext = pageInfo.hasNextPage || (backward && list.registrations.length > 0);
    const hasPrevious =
      pageInfo.hasPreviousPage || (request.after !== undefined && list.registrations.length > 0);
    return {
      registrations: unique(list.registrations).filter((r) => matches(r, request)),
      next: hasNext ? pageInfo.endCursor : null,
      previous: hasPrevious ? pageInfo.startCursor : null,
    };
  }

  /**
   * Every page from a cursor, in one direction: forward (`after`, `first`) or backward
   * (`before`, `last`). Ends when the provider says nothing more lies that way.
   */
  async *pages(
    shop: ShopRecord,
    options: RegistrationFilters & {
      direction: "forward" | "backward";
      cursor?: string | undefined;
      size: number;
    },
  ): AsyncGenerator<Registration[]> {
    const forward = options.direction === "forward";
    let cursor = options.cursor;
    const used = new Set<string>();
    for (;;) {
      const list = await this.fetchPage(shop, {
        ...filtersOf(options),
        orderBy: "desc",
        ...(forward
          ? { first: options.size, ...(cursor !== undefined ? { after: cursor } : {}) }
          : { last: options.size, ...(cursor !== undefined ? { before: cursor } : {}) }),
      });
      yield list.registrations;
      const more = forward ? list.pageInfo.hasNextPage : list.pageInfo.hasPreviousPage;
      if (!more) return;
      const nextCursor = forward ? list.pageInfo.endCursor : list.pageInfo.startCursor;
      if (nextCursor === null) {
        throw new RegistrationsUnavailableError(
          "The provider said more registrations follow but sent no cursor to fetch them; the list stops here.",
          "provider",
        );
      }
      if (used.has(nextCursor)) {
        throw new RegistrationsUnavailableError(
          "The provider sent the same page twice; the list stops here.",
          "provider",
        );
      }
      used.add(nextCursor);
      cursor = nextCursor;
    }
  }

  /**
   * The registrations, newest first, page after page. With `since`, paging stops at the first
   * registration older than it, as long as the provider is seen to sort newest first; a
   * provider that does not (its `createdOn` go up somewhere) has every page read and filtered.
   * A registration without `createdOn` cannot be placed and is left out when `since` is given.
   */
  async *list(shop: ShopRecord, options: ListOptions = {}): AsyncGenerator<Registration> {
    const { since, limit } = options;
    const size =
      since === undefined && limit !== undefined ? Math.min(MAX_PAGE_SIZE, limit) : MAX_PAGE_SIZE;
    const seen = new Set<number>();
    let sortedNewestFirst = true;
    let previousCreated = Number.POSITIVE_INFINITY;
    let given = 0;
    for await (const page of this.pages(shop, {
      ...filtersOf(options),
      direction: "forward",
      size,
    })) {
      // Checked over the whole page before anything in it may stop the paging.
      for (const r of page) {
        const created = createdMs(r);
        if (Number.isNaN(created)) continue;
        if (created > previousCreated) sortedNewestFirst = false;
        previousCreated = created;
      }
      for (const r of page) {
        if (seen.has(r.registrationId)) continue;
        seen.add(r.registrationId);
        if (since !== undefined) {
          const created = createdMs(r);
          if (Number.isNaN(created)) continue;
          if (created < since) {
            if (sortedNewestFirst) return;
            continue;
          }
        }
        if (!matches(r, options)) continue;
        yield r;
        given++;
        if (limit !== undefined && given >= limit) return;
      }
    }
  }

  /**
   * The one provider call of this module: GET the registrations page for the shop's store,
   * through the store's rate limiter at bulk priority (live orders go first), the token fetched
   * before the slot is taken. A 429 blocks the store for every process until its Retry-After and
   * the page is asked again; a wait longer than `maxWaitMs` ends in "busy". Errors come back as
   * {@link RegistrationsUnavailableError}, in words; the log gets the status, never the query
   * (it can hold a customer's email).
   */
  async fetchPage(shop: ShopRecord, query: RegistrationQuery): Promise<RegistrationList> {
    const problem = RegistrationReader.problem(shop);
    if (problem) throw new RegistrationsUnavailableError(problem, "not-configured");
    const storeId = shop.storeId as number;
    const { limiter } = this.#deps;
    const client = this.#deps.providers.for(shop);
    const waitUntil = Date.now() + this.#maxWaitMs;
    try {
      await client.getTokenInfo();
      const page = await limiter.call(
        storeId,
        "bulk",
        () => client.listRegistrations({ ...query, storeId }),
        { waiter: `registrations:${randomUUID()}`, waitUntil },
      );
      if (!page.done) throw busy(page.waitMs);
      return page.value;
    } catch (error) {
      if (error instanceof RegistrationsUnavailableError) throw error;
      const explained = explain(error);
      this.#deps.logger?.warn(
        {
          shop: shop.shop,
          storeId,
          reason: explained.reason,
          status: error instanceof ProviderError ? error.status : undefined,
          requestId: error instanceof ProviderError ? error.requestId : undefined,
        },
        "registrations: the provider did not answer with a page",
      );
      throw explained;
    }
  }
}

function busy(waitMs: number): RegistrationsUnavailableError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new RegistrationsUnavailableError(
    `The provider's request budget for your store is in use by order sync just now: try again in ${seconds} s.`,
    "busy",
  );
}

/** A provider failure as one line for the merchant. */
function explain(error: unknown): RegistrationsUnavailableError {
  if (error instanceof ProviderAuthError) {
    return new RegistrationsUnavailableError(
      error.kind === "insufficient_scope"
        ? "The provider did not let these credentials read registrations (scope read:registrations): ask the provider to grant it."
        : "The provider did not accept this shop's client ID and secret: verify them again under Settings → Provider connection.",
      "credentials",
    );
  }
  if (
    error instanceof ProviderValidationError &&
    error.fields.some((f) => f.path === "after" || f.path === "before")
  ) {
    return new RegistrationsUnavailableError(
      "The provider no longer accepts this page's link: start again from the first page.",
      "cursor",
    );
  }
  if (error instanceof ProviderNotFoundError) {
    return new RegistrationsUnavailableError(
      "The provider does not know this shop's store for these credentials: choose the store again under Settings → Provider connection.",
      "credentials",
    );
  }
  if (error instanceof ProviderConnectionError) {
    return new RegistrationsUnavailableError(
      "The provider could not be reached: try again in a few minutes.",
      "unreachable",
    );
  }
  if (error instanceof ProviderError) {
    return new RegistrationsUnavailableError(
      `The provider answered with an error (${error.status ?? "no status"}${error.requestId ? `, request ${error.requestId}` : ""}): try again in a few minutes.`,
      "provider",
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return new RegistrationsUnavailableError(
    `Registrations could not be read: ${message}.`,
    "provider",
  );
}

function filtersOf(f: RegistrationFilters): RegistrationFilters {
  return {
    ...(f.customerEmail ? { customerEmail: f.customerEmail } : {}),
    ...(f.channelName ? { channelName: f.channelName } : {}),
    ...(f.externalId ? { externalId: f.externalId } : {}),
  };
}

/**
 * The filters again, on what came back (a provider may ignore one): the email without regard
 * to case (addresses are compared that way), the channel and external ID exactly.
 */
function matches(r: Registration, f: RegistrationFilters): boolean {
  if (f.customerEmail && r.customerEmail.toLowerCase() !== f.customerEmail.toLowerCase())
    return false;
  if (f.channelName && r.channelName !== f.channelName) return false;
  if (f.externalId && r.externalId !== f.externalId) return false;
  return true;
}

function unique(list: Registration[]): Registration[] {
  const seen = new Set<number>();
  return list.filter((r) => !seen.has(r.registrationId) && seen.add(r.registrationId));
}

function createdMs(r: Registration): number {
  return r.createdOn ? Date.parse(r.createdOn) : Number.NaN;
}
