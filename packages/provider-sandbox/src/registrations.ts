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
