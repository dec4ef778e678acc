//! The report's style sheet, inline in the page (nothing is fetched): system fonts, a readable
//! measure, tables that scroll sideways on narrow screens, and one colour per verdict.

/// The CSS of the page.
pub const STYLE: &str = r#"
:root { --fg: #1b1b1b; --muted: #5a5a5a; --line: #d9d9d9; --bg: #ffffff; --head: #f4f4f4; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: var(--bg);
       font: 15px/1.45 "DejaVu Sans", "Liberation Sans", Arial, Helvetica, sans-serif; }
header { padding: 18px 28px 8px; border-bottom: 1px solid var(--line); }
h1 { margin: 0; font-size: 26px; }
h2 { margin: 34px 0 10px; font-size: 21px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { margin: 22px 0 8px; font-size: 17px; }
.sub { color: var(--muted); margin: 4px 0 10px; }
nav { padding: 6px 28px; border-bottom: 1px solid var(--line); background: var(--head); }
nav ul { margin: 0; padding: 0; list-style: none; display: flex; flex-wrap: wrap; gap: 4px 18px; }
nav a { color: #1a4f8b; text-decoration: none; }
nav a:hover { text-decoration: underline; }
main { padding: 0 28px 40px; max-width: 1500px; }
figure { margin: 18px 0 26px; }
figure svg { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); max-width: 900px; margin-top: 6px; font-size: 14px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0 12px; }
th, td { border: 1px solid var(--line); padding: 3px 7px; vertical-align: top; }
th { background: var(--head); text-align: left; position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.what { min-width: 240px; max-width: 380px; }
tr.detail td { color: #333; border-top: none; padding-bottom: 7px; font-size: 12.5px; }
tr.item td { border-bottom: none; }
td.id code { white-space: nowrap; }
tr.total td { font-weight: bold; background: var(--head); }
.v { display: inline-block; padding: 0 6px; border-radius: 3px; font-size: 12px; white-space: nowrap; }
.v-reproduced { background: #cdebd3; color: #0f4d1d; }
.v-held { background: #d4e8f7; color: #0d3d66; }
.v-missed, .v-failed { background: #f8d2cf; color: #7a140c; }
.v-fitted { background: #efe2f7; color: #4d1f66; }
.v-input { background: #ececec; color: #333; }
.v-method { background: #fff0c2; color: #5c4400; }
.v-missing { background: #f2f2f2; color: #666; }
.v-not-run { background: #fde3c8; color: #6b3500; }
.share { display: flex; height: 14px; width: 320px; border: 1px solid var(--line); }
.share span { display: block; height: 100%; }
.share .b-reproduced { background: #4caf63; } .share .b-missed { background: #e0523f; }
.share .b-fitted { background: #a86cc9; } .share .b-input { background: #9e9e9e; }
.share .b-held { background: #4a90c9; } .share .b-failed { background: #b2392c; }
.share .b-method { background: #e6b422; } .share .b-missing { background: #dedede; }
.share .b-not-run { background: #f0a35a; }
.legend-row { font-size: 13px; color: var(--muted); }
.legend-row .v { margin-right: 4px; }
code { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 12px; }
.engine { color: var(--muted); font-weight: normal; }
ul.notes { color: var(--muted); font-size: 14px; }
"#;
