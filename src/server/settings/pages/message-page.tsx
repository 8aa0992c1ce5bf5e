import { Layout } from "./layout.tsx";

/** A full page with one message: install refusals, a missing session. */
export function MessagePage(props: { title: string; message: string }) {
  return (
    <Layout title={props.title}>
      <section>
        <h2>{props.title}</h2>
        <p role="alert">{props.message}</p>
      </section>
    </Layout>
  );
}
