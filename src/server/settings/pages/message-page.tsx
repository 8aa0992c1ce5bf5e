import { Layout } from "./layout.tsx";

/**
 * A full page with one message: install refusals, a missing session. `nonce` is the response's
 * CSP nonce: without it the page's style is blocked and it shows unstyled.
 */
export function MessagePage(props: { title: string; message: string; nonce: string }) {
  return (
    <Layout title={props.title} nonce={props.nonce}>
      <section>
        <h2>{props.title}</h2>
        <p role="alert">{props.message}</p>
      </section>
    </Layout>
  );
}
