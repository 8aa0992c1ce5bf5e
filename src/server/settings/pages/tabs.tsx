import type { EmbeddedParams } from "../../install/embedded.ts";

/** The settings area's tabs, in order: one line adds a tab (its route serves `path`). */
export const SETTINGS_TABS = [
  { id: "settings", label: "Settings", path: "/settings" },
  { id: "registrations", label: "Registrations", path: "/settings/registrations" },
] as const satisfies readonly { id: string; label: string; path: string }[];

export type SettingsTabId = (typeof SETTINGS_TABS)[number]["id"];

/**
 * A link within the settings area. Inside the Shopify admin it keeps `embedded`, `shop` and
 * `host`, so the page it opens stays in the admin: the page's link script adds a fresh session
 * token on click (and without it the bounce page fetches one).
 */
export function settingsHref(
  path: string,
  query: Record<string, string | number | undefined> = {},
  nav?: EmbeddedParams,
): string {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== "") search.set(k, String(v));
  }
  if (nav) {
    search.set("embedded", "1");
    search.set("shop", nav.shop);
    search.set("host", nav.host);
  }
  const text = search.toString();
  return text ? `${path}?${text}` : path;
}

/** The tab bar: the current tab marked for screen readers (`aria-current`). */
export function SettingsTabs(props: { current: SettingsTabId; nav?: EmbeddedParams | undefined }) {
  return (
    <nav class="tabs" aria-label="Settings pages">
      {SETTINGS_TABS.map((tab) => (
        <a
          href={settingsHref(tab.path, {}, props.nav)}
          aria-current={tab.id === props.current ? "page" : undefined}
        >
          {tab.label}
        </a>
      ))}
    </nav>
  );
}
