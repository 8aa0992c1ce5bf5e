import { stringify } from "csv-stringify/sync";
import type { Registration } from "../provider/schemas.ts";

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
  cell: (r: Registration) => string | number | boolean | null | undefined;
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

/**
 * A cell a spreadsheet would run as a formula (=, +, -, @, or a leading tab or carriage return)
 * gets a leading apostrophe: customers type their own names and order numbers.
 */
function neutralize(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return "";
  if (typeof value !== "string") return String(value);
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

const CSV_OPTIONS = { record_delimiter: "windows" } as const;

/** The header line (RFC 4180: CRLF, quoted where needed). */
export function registrationCsvHeader(): string {
  return stringify([REGISTRATION_CSV_COLUMNS.map((c) => c.header)], CSV_OPTIONS);
}

/** One registration as a CSV line: commas, quotes and line breaks quoted by csv-stringify. */
export function registrationCsvRow(r: Registration): string {
  return stringify([REGISTRATION_CSV_COLUMNS.map((c) => neutralize(c.cell(r)))], CSV_OPTIONS);
}
