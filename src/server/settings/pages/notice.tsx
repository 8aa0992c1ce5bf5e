export interface NoticeProps {
  kind: "error" | "warning" | "success";
  message: string;
  /** Its element's id, for the fields it describes (`aria-describedby`). */
  id?: string;
}

/** A message in a section; errors are announced to screen readers at once. */
export function Notice(props: NoticeProps) {
  return (
    <p
      id={props.id}
      class={`notice ${props.kind}`}
      role={props.kind === "error" ? "alert" : "status"}
    >
      {props.message}
    </p>
  );
}
