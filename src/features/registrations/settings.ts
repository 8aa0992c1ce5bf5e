import { readRegistration } from "../../provider/events.ts";
import type { ProviderAccount, ProviderEventRepository, ShopRecord } from "../../store/index.ts";

/** A registration event as the Registrations tab lists it (no customer data). */
export interface RegistrationEventView {
  registrationId: string | null;
  externalId: string | null;
  /** `registration/created`, `registration/updated`… as sent. */
  topic: string | null;
  receivedAt: string;
}

export interface RegistrationEventsDeps {
  events: ProviderEventRepository;
  /** The shop's provider account (its API and client ID); null before credentials are saved. */
  accountOf(shop: ShopRecord): ProviderAccount | null;
}

/** What the provider's webhooks reported about a shop's registrations (POST /webhooks/provider). */
export class RegistrationEvents {
  constructor(private readonly deps: RegistrationEventsDeps) {}

  /**
   * The provider's latest registration events about the shop's store, newest first: what the
   * Registrations tab shows as just reported, before or beside the provider's list.
   */
  async recent(shop: ShopRecord, limit = 5): Promise<RegistrationEventView[]> {
    const account = this.deps.accountOf(shop);
    if (!account || shop.storeId === null) return [];
    const rows = await this.deps.events.recentRegistrationEvents(
      { providerBaseUrl: account.providerBaseUrl, storeId: shop.storeId },
      limit,
    );
    return rows.map((row) => {
      const facts = row.registration ? readRegistration(row.registration) : null;
      return {
        registrationId: facts?.registrationId ?? null,
        externalId: facts?.externalId ?? null,
        topic: row.topic,
        receivedAt: row.receivedAt,
      };
    });
  }
}
