/** One small stylesheet, inlined: no asset pipeline, no third-party origin on a merchant page. */
export const STYLES = `
:root { color-scheme: light; --ink:#1f2328; --muted:#57606a; --line:#d0d7de; --bg:#f6f8fa;
  --accent:#0b6e4f; --warn-bg:#fff8c5; --warn:#7d4e00; --err-bg:#ffebe9; --err:#a40e26;
  --ok-bg:#dafbe1; --ok:#116329; }
* { box-sizing: border-box; }
body { margin:0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color:var(--ink); background:var(--bg); }
header { background:#fff; border-bottom:1px solid var(--line); padding:14px 24px; }
header h1 { font-size:18px; margin:0; }
header p { margin:2px 0 0; color:var(--muted); font-size:13px; }
main { max-width:820px; margin:24px auto; padding:0 16px; }
section { background:#fff; border:1px solid var(--line); border-radius:8px; padding:18px 20px;
  margin-bottom:18px; }
section h2 { font-size:16px; margin:0 0 4px; }
section > p.hint { color:var(--muted); margin:0 0 12px; font-size:13px; }
label { display:block; font-weight:600; margin:10px 0 4px; }
.field-hint { font-weight:400; color:var(--muted); font-size:13px; }
input[type=text], input[type=password], input[type=number], input[type=date], select {
  display:block; width:100%; max-width:420px; padding:7px 9px; border:1px solid var(--line); border-radius:6px;
  font:inherit; background:#fff; }
input:focus, select:focus, button:focus { outline:2px solid var(--accent); outline-offset:1px; }
fieldset { border:0; padding:0; margin:8px 0; }
legend { font-weight:600; padding:0; margin-bottom:4px; }
.choice { display:flex; gap:8px; align-items:baseline; font-weight:400; margin:4px 0; }
button { margin-top:12px; padding:8px 14px; border:0; border-radius:6px; background:var(--accent);
  color:#fff; font:inherit; font-weight:600; cursor:pointer; }
button.secondary { background:#fff; color:var(--ink); border:1px solid var(--line); }
table { border-collapse:collapse; width:100%; font-size:14px; }
th, td { text-align:left; padding:6px 8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--muted); font-weight:600; }
.notice { border-radius:6px; padding:10px 12px; margin:0 0 14px; }
.notice.error { background:var(--err-bg); color:var(--err); }
.notice.warning { background:var(--warn-bg); color:var(--warn); }
.notice.success { background:var(--ok-bg); color:var(--ok); }
.counts { display:flex; gap:12px; flex-wrap:wrap; margin:6px 0 10px; }
.count { flex:1 1 120px; border:1px solid var(--line); border-radius:6px; padding:8px 12px; }
.count strong { display:block; font-size:22px; }
progress { width:100%; max-width:420px; height:14px; }
.muted { color:var(--muted); }
code { font-size:13px; }
caption { text-align:left; padding-bottom:6px; }
label.plain { margin:0; }
.progress-line { display:flex; gap:12px; align-items:center; }
`;
