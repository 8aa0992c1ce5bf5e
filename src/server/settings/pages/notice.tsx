export interface NoticeProps {
  kind: "error" | "warning" | "success";
  message: string;
}

/** A message in a section; errors are announced to screen readers at once. */
export function Notice(props: NoticeProps) {
  return (
    <p class={`notice ${props.kind}`} role={props.kind === "error" ? "alert" : "status"}>
      {props.message}
    </p>
  );
}
