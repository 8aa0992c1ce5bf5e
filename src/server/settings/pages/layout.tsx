import { raw } from "hono/html";
import type { Child } from "hono/jsx";
import { STYLES } from "./styles.ts";

export function Layout(props: { title: string; shop?: string; nonce?: string; children: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="referrer" content="same-origin" />
        <title>{props.title} · Order sync</title>
        <style nonce={props.nonce}>{raw(STYLES)}</style>
      </head>
      <body>
        <header>
          <h1>Shipping protection order sync</h1>
          {props.shop ? <p>Settings for {props.shop}</p> : null}
        </header>
        <main>{props.children}</main>
      </body>
    </html>
  );
}
