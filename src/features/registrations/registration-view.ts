import { type CsvValue, csvLine } from "../../lib/csv.ts";
import type { Registration } from "../../provider/schemas.ts";

/** A registration as the terminal table and the settings tab show it, one line per field. */
export interface RegistrationRow {
  externalId: string;
  customer: string;
  email: string;
  channel: string;
  items: string;
  created: string;
}

/** "2 × Trail shoes (TRAIL-42); 1 × Laces (L-1)". */
export function itemsText(r: Registration): string {
  return r.lineItems
    .map((li) => `${li.quantity} × ${li.name}${li.sku ? ` (${li.sku})` : ""}`)
    .join("; ");
}

/** "2026-01-31 09:00 UTC", or the provider's text when it is not a date-time we can read. */
export function createdText(r: Registration): string {
  if (!r.createdOn) return "";
  const ms = Date.parse(r.createdOn);
  if (Number.isNaN(ms)) return r.createdOn;
  return `${new Date(ms).toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export function registrationRow(r: Registration): RegistrationRow {
  return {
    externalId: r.externalId,
    customer: r.customerName ?? "",
    email: r.customerEmail,
    channel: r.channelName,
    items: itemsText(r),
    created: createdText(r),
  };
}

/** The CSV's columns, in order: the header line and how each cell is read. */
export const REGISTRATION_CSV_COLUMNS: readonly {
  header: string;
  cell: (r: Registration) => CsvValue;
}[] = [
  { header: "Registration ID", cell: (r) => r.registrationId },
  { header: "External ID", cell: (r) => r.externalId },
  { header: "Created", cell: (r) => r.createdOn },
  { header: "Customer name", cell: (r) => r.customerName },
  { header: "Email", cell: (r) => r.customerEmail },
  { header: "Channel", cell: (r) => r.channelName },
  { header: "Items", cell: itemsText },
  { header: "Order number", cell: (r) => r.customerProvidedOrderNumber },
  { header: "Estimated purchase date", cell: (r) => r.estimatedPurchaseDate },
  { header: "Email marketing consent", cell: (r) => (r.emailMarketingConsent ? "yes" : "no") },
  {
    header: "Claims",
    cell: (r) => r.claims.map((c) => `${c.claimType} ${c.externalId}`).join("; "),
  },
  { header: "Canceled", cell: (r) => r.canceledOn },
];

/** The header line (RFC 4180: CRLF, quoted where needed). */
export function registrationCsvHeader(): string {
  return csvLine(REGISTRATION_CSV_COLUMNS.map((c) => c.header));
}

/**
 * One registration as a CSV line, through the connector's one safe-cell writer (lib/csv.ts):
 * formulas neutralised at the start of every line of a cell, any line break quoted.
 */
export function registrationCsvRow(r: Registration): string {
  return csvLine(REGISTRATION_CSV_COLUMNS.map((c) => c.cell(r)));
}
