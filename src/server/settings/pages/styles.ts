/**
 * One small stylesheet, inlined, in the Shopify admin's look (Polaris's colors, type scale,
 * cards and buttons), so the page reads as part of the admin with or without Polaris's web
 * components: where `polaris.js` loads, `<s-page>` takes over the page's frame; where it cannot
 * (development, offline), the rules for `:not(:defined)` give the same layout.
 */
export const STYLES = `
:root { color-scheme: light; --ink:#303030; --muted:#616161; --line:#e3e3e3; --field:#8a8a8a;
  --bg:#f1f1f1; --card:#ffffff; --accent:#303030; --focus:#005bd3;
  --warn-bg:#fff1e3; --warn:#5e4200; --err-bg:#fee9e8; --err:#8e1f0b;
  --ok-bg:#cdfee1; --ok:#0c5132; }
* { box-sizing: border-box; }
body { margin:0; font: 13px/20px Inter, -apple-system, BlinkMacSystemFont, "San Francisco",
  "Segoe UI", Roboto, "Helvetica Neue", sans-serif; color:var(--ink); background:var(--bg); }
header { background:#1a1a1a; color:#e3e3e3; padding:12px 24px; }
header h1 { font-size:14px; font-weight:650; margin:0; color:#fff; }
header p { margin:0; color:#b5b5b5; font-size:12px; }
main { max-width:840px; margin:20px auto; padding:0 16px; }
s-page:not(:defined) { display:block; }
.shop-line { color:var(--muted); margin:0 0 12px; }
section { background:var(--card); border-radius:12px; padding:16px; margin-bottom:16px;
  box-shadow: 0 1px 0 0 rgba(26,26,26,.07), inset 0 1px 0 0 rgba(255,255,255,.2),
    inset 0 -1px 0 0 rgba(0,0,0,.17), inset 1px 0 0 0 rgba(0,0,0,.13),
    inset -1px 0 0 0 rgba(0,0,0,.13); }
section h2 { font-size:14px; line-height:20px; font-weight:650; margin:0 0 4px; }
section > p.hint { color:var(--muted); margin:0 0 12px; }
label { display:block; font-weight:550; margin:12px 0 4px; }
.field-hint { font-weight:450; color:var(--muted); }
input[type=text], input[type=password], input[type=number], input[type=date], select {
  display:block; width:100%; max-width:420px; min-height:32px; padding:6px 12px;
  border:1px solid var(--field); border-radius:8px; font:inherit; color:var(--ink); background:#fdfdfd; }
input[aria-invalid=true], select[aria-invalid=true] { border:2px solid var(--err); }
input:focus, select:focus, button:focus { outline:2px solid var(--focus); outline-offset:1px; }
fieldset { border:0; padding:0; margin:8px 0; }
legend { font-weight:550; padding:0; margin-bottom:4px; }
.choice { display:flex; gap:8px; align-items:baseline; font-weight:450; margin:4px 0; }
button { margin-top:12px; min-height:28px; padding:6px 12px; border:0; border-radius:8px;
  background:var(--accent); color:#fff; font:inherit; font-weight:550; cursor:pointer;
  box-shadow: 0 -1px 0 1px rgba(0,0,0,.8) inset, 0 0 0 1px #303030 inset,
    0 .5px 0 1.5px rgba(255,255,255,.25) inset; }
button.secondary { background:#fff; color:var(--ink);
  box-shadow: 0 -1px 0 0 #b5b5b5 inset, 0 0 0 1px rgba(0,0,0,.1) inset, 0 .5px 0 1.5px #fff inset; }
table { border-collapse:collapse; width:100%; }
th, td { text-align:left; padding:8px; border-bottom:1px solid var(--line); vertical-align:top; }
th { color:var(--muted); font-weight:550; background:#f7f7f7; }
.notice { border-radius:8px; padding:8px 12px; margin:0 0 12px; }
.notice.error { background:var(--err-bg); color:var(--err); }
.notice.warning { background:var(--warn-bg); color:var(--warn); }
.notice.success { background:var(--ok-bg); color:var(--ok); }
.counts { display:flex; gap:12px; flex-wrap:wrap; margin:6px 0 10px; }
.count { flex:1 1 120px; border:1px solid var(--line); border-radius:8px; padding:8px 12px; }
.count strong { display:block; font-size:20px; line-height:28px; font-weight:650; }
progress { width:100%; max-width:420px; height:12px; accent-color:var(--accent); }
.muted { color:var(--muted); }
code { font-size:12px; }
caption { text-align:left; padding-bottom:6px; }
label.plain { margin:0; }
.progress-line { display:flex; gap:12px; align-items:center; }
body.embedded main { margin-top:16px; }
nav.tabs { display:flex; gap:4px; margin:0 0 16px; border-bottom:1px solid var(--line); }
nav.tabs a { padding:8px 12px; color:var(--muted); text-decoration:none; font-weight:550;
  border-bottom:2px solid transparent; margin-bottom:-1px; }
nav.tabs a[aria-current=page] { color:var(--ink); border-bottom-color:var(--ink); }
nav.tabs a:focus { outline:2px solid var(--focus); outline-offset:1px; }
.filters { display:flex; flex-wrap:wrap; gap:0 12px; align-items:flex-end; margin-bottom:12px; }
.filters label { margin:8px 0 4px; }
.filters input, .filters select { width:auto; min-width:140px; }
.pager { display:flex; gap:12px; align-items:center; margin-top:12px; flex-wrap:wrap; }
a.button { display:inline-block; min-height:28px; padding:4px 12px; border-radius:8px;
  background:#fff; color:var(--ink); text-decoration:none; font-weight:550;
  box-shadow: 0 -1px 0 0 #b5b5b5 inset, 0 0 0 1px rgba(0,0,0,.1) inset, 0 .5px 0 1.5px #fff inset; }
a.button:focus { outline:2px solid var(--focus); outline-offset:1px; }
/* A table wider than a phone's screen scrolls inside its card; long words (a URL) wrap. */
.table-wrap { overflow-x:auto; }
code { overflow-wrap:anywhere; }
`;
