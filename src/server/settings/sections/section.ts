import type { Context, Hono } from "hono";
import type { Child } from "hono/jsx";
import type { HtmlEscapedString } from "hono/utils/html";
import type { Catalog } from "../../../settings/index.ts";
import type { ShopRecord } from "../../../store/index.ts";
import type { Env, SettingsRouteDeps } from "../settings-guard.tsx";

/**
 * One section of the settings page: what it reads (`load`), the forms it takes (`actions`) and
 * how it looks (`View`), in one folder under sections/. The page renders the sections of
 * `SECTIONS` (sections/index.ts) in order; a refused form renders its own section alone, so
 * only that section's loader runs.
 */
export interface SettingsSection<Data = unknown> {
  /** The section's notice slot and the anchor (`#<id>-title`) a save returns to. */
  id: string;
  /** Its heading on the page. */
  title: string;
  /**
   * The messages a save redirects with (`/settings?saved=<key>`), by key: the slot they show in
   * (the section's id, or another heading of the section such as `store`) and their text. The
   * redirect carries the key, never free text.
   */
  saved: Record<string, { slot: string; message: string }>;
  /** What the view needs; null where this installation has no such section (it is left out). */
  load(ctx: SectionContext): Promise<Data | null>;
  /** Registers the section's routes under /settings: its forms, and reads such as a progress. */
  actions(app: Hono<Env>, kit: SectionKit, deps: SettingsRouteDeps): void;
  View(props: SectionViewProps<Data>): HtmlEscapedString | Promise<HtmlEscapedString>;
}

/** What a loader reads from, for one render. */
export interface SectionContext {
  /** The shop as saved now (re-read: a save just before the render changed the row). */
  shop: ShopRecord;
  deps: SettingsRouteDeps;
  /** The shop's products and locations from Shopify: read once a render, whoever asks. */
  catalog(): Promise<Catalog>;
}

export interface SectionViewProps<Data> {
  title: string;
  data: Data;
  shop: ShopRecord;
  /** The page's notice when it belongs to `slot` (a save's or a refusal's message). */
  notice(slot: string): Child;
  /** Values typed into a refused form, shown again. */
  typed: Typed;
  /**
   * The attributes that tie a field to the refusal it caused (spread them on the input):
   * `aria-invalid`, `aria-describedby` naming the error message, and `autofocus` on the first
   * such field, so the keyboard and a screen reader land on what to fix. Empty for any other.
   */
  invalid(field: string): FieldState;
  nonce: string;
  /** Inside the Shopify admin. */
  embedded: boolean;
}

/** Values typed into a form that was refused, to show them again (never a secret). */
export interface Typed {
  clientId?: string;
  environment?: string;
  since?: string;
  orderName?: string;
  /** Locations: each Shopify location's ID as typed, by the location's Shopify ID. */
  locations?: Record<string, string>;
  defaultLocationId?: string;
}

/** See `SectionViewProps.invalid`. */
export interface FieldState {
  "aria-invalid"?: "true";
  "aria-describedby"?: string;
  autofocus?: true;
}

/** How a section's routes answer. */
export interface SectionKit {
  /**
   * The page again with this section alone and the message in `slot` (the section's id unless
   * told), answered 400 unless told, with `field` marked (see `SectionViewProps.invalid`).
   */
  refuse(
    c: Context<Env>,
    message: string,
    options?: {
      slot?: string;
      typed?: Typed;
      status?: 400 | 413;
      /** The `id` of the field(s) the message is about: marked invalid, the first focused. */
      field?: string | readonly string[];
    },
  ): Promise<Response>;
  /** 303 to the page with one of the section's `saved` messages, at its slot. */
  saved(c: Context<Env>, key: string): Response;
}

/** A form field as text, trimmed; anything else (a file, a missing field) is "". */
export const formText = (v: unknown) => (typeof v === "string" ? v.trim() : "");
