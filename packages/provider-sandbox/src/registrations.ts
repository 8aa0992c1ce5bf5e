/** Deterministic registrations per store, so listing and paging can be exercised. */
export interface StoredRegistration {
  registrationId: number;
  storeId: number;
  externalId: string;
  customerEmail: string;
  customerName: string;
  channelName: string;
  emailMarketingConsent: boolean;
  lineItems: {
    lineItemId: number;
    sourceLineItemId: string;
    sku: string;
    name: string;
    quantity: number;
  }[];
  claims: { claimId: number; externalId: string; claimType: "Warranty" | "Return" }[];
  createdOn: string;
}

export function seedRegistrations(storeId: number, count: number): StoredRegistration[] {
  return Array.from({ length: count }, (_, index) => {
    const i = index + 1;
    const registrationId = storeId * 100_000 + i;
    return {
      registrationId,
      storeId,
      externalId: `REG-${storeId}-${i}`,
      customerEmail: `customer${i % 7}@example.com`,
      customerName: `Customer ${i % 7}`,
      channelName: i % 3 === 0 ? "retail" : "web",
      emailMarketingConsent: i % 2 === 0,
      lineItems: [
        {
          lineItemId: registrationId,
          sourceLineItemId: `src-${i}`,
          sku: `SKU-${i % 5}`,
          name: `Product ${i % 5}`,
          quantity: 1,
        },
      ],
      claims:
        i % 10 === 0
          ? [{ claimId: registrationId, externalId: `CLM-${i}`, claimType: "Warranty" }]
          : [],
      createdOn: new Date(Date.UTC(2026, 0, 1) + i * 3_600_000).toISOString(),
    };
  });
}

/** What a test or a harness gives to add a registration (the rest is filled in). */
export interface RegistrationInput {
  externalId: string;
  customerEmail: string;
  customerName?: string | undefined;
  channelName: string;
  emailMarketingConsent?: boolean | undefined;
  lineItems?: { sku: string; name: string; quantity: number }[] | undefined;
  /** RFC 3339; now when omitted. */
  createdOn?: string | undefined;
}

/**
 * Adds registrations to a store as the provider would record them: the next service IDs of the
 * store (after the seeded ones), line items numbered from the registration's ID.
 */
export function addRegistrations(
  list: StoredRegistration[],
  storeId: number,
  inputs: RegistrationInput[],
): StoredRegistration[] {
  let next = list
    .filter((r) => r.storeId === storeId)
    .reduce((max, r) => Math.max(max, r.registrationId), storeId * 100_000);
  const added = inputs.map((input): StoredRegistration => {
    const registrationId = ++next;
    return {
      registrationId,
      storeId,
      externalId: input.externalId,
      customerEmail: input.customerEmail,
      customerName: input.customerName ?? "",
      channelName: input.channelName,
      emailMarketingConsent: input.emailMarketingConsent ?? false,
      lineItems: (input.lineItems ?? [{ sku: "SKU-0", name: "Product 0", quantity: 1 }]).map(
        (item, index) => ({
          lineItemId: registrationId * 100 + index,
          sourceLineItemId: `src-${registrationId}-${index}`,
          ...item,
        }),
      ),
      claims: [],
      createdOn: new Date(input.createdOn ?? Date.now()).toISOString(),
    };
  });
  list.push(...added);
  return added;
}
