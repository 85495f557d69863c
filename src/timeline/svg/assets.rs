//! The timeline page's inline style sheet (light and dark) and its one small script, which
//! shows an element's details on hover and pins them on click.

pub(super) const STYLE: &str = ":root{color-scheme:light dark;--bg:#f6f7f9;--card:#fff;--fg:#1c1e21;--muted:#5d636b;\
--border:#e2e5e9;--grid:#eceef1;--ok:#2e7d32;--bad:#c62828;--warn:#e56b00;--alt:#7b1fa2;--info:#1565c0;\
--none:#a3a8ae;--amber:#b08900;--teal:#00838f;--pink:#ad1457;--slate:#455a64}\
@media (prefers-color-scheme:dark){:root{--bg:#111315;--card:#1a1d21;--fg:#e6e8eb;--muted:#a0a6ad;\
--border:#2c3137;--grid:#23272c;--ok:#66bb6a;--bad:#ef5350;--warn:#ffa040;--alt:#ce93d8;--info:#64b5f6;\
--none:#7d848c;--amber:#ffd54f;--teal:#4dd0e1;--pink:#f06292;--slate:#b0bec5}}\
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);\
font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,Arial,sans-serif}\
main{padding:16px 20px 40px}h1{font-size:21px;margin:0 0 6px}h1 code{font-size:19px}\
a{color:var(--info)}.back{margin:0 0 8px;font-size:13px}\
.facts{display:flex;flex-wrap:wrap;gap:4px 22px;margin:0 0 8px}.facts div{display:flex;gap:6px}\
.facts dt{color:var(--muted)}.facts dd{margin:0;font-variant-numeric:tabular-nums}\
.note{color:var(--muted);font-size:13px;margin:4px 0}\
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:8px 0;color:var(--muted)}\
.legend i{display:inline-block;width:12px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}\
.tl{display:flex;background:var(--card);border:1px solid var(--border);border-radius:8px}\
.tl svg{display:block;font-size:12px;font-family:inherit;flex:none}\
.scroll{overflow-x:auto;flex:1 1 auto}\
svg .t{fill:var(--fg)}svg .m{fill:var(--muted);font-size:11px}svg .small{font-size:10px}\
svg .lane{font-weight:600}svg .bt{fill:#fff;font-size:11px;pointer-events:none}\
svg .grid{stroke:var(--grid)}svg .lanesep{stroke:var(--border)}\
svg .tl-spawn{stroke:var(--muted);stroke-dasharray:2 2;fill:none}\
[data-i]{cursor:pointer}[data-i]:hover,.pinned{stroke:var(--fg);stroke-width:1.5}\
.st-completed,.st-settled,.st-answer{fill:var(--ok)}.st-failed,.st-protocol_error{fill:var(--bad)}\
.st-interrupted,.st-cancelled{fill:var(--warn)}.st-unknownoutcome{fill:var(--alt)}\
.st-running{fill:var(--info)}.st-blocked{fill:var(--amber)}\
.st-unsettled{fill:var(--none)}.tl-open{fill-opacity:.55;stroke:var(--fg);stroke-dasharray:4 2}\
.tl-provisional{fill-opacity:.5;stroke:var(--bad);stroke-dasharray:3 2}\
.tl-model{fill:var(--slate)}.tl-model.tl-failed{fill:var(--bad)}\
.tl-tool{stroke:var(--card);stroke-width:.5}.ts-ok{fill:var(--teal)}.ts-bad{fill:var(--bad)}\
.ts-none{fill:var(--none)}.ts-other{fill:var(--amber)}\
.tl-error{fill:var(--bad)}.tl-error.tl-recovered{fill:var(--warn)}\
.tl-error.tl-mismatch{stroke:var(--fg);stroke-width:1.5}\
.tl-callback{fill:var(--pink)}\
.v-assistant{fill:var(--ok)}.v-reasoning{fill:var(--alt)}.v-progress{fill:var(--info)}\
#tl-detail{position:fixed;right:16px;bottom:16px;width:min(460px,calc(100vw - 32px));max-height:60vh;\
overflow:auto;background:var(--card);border:1px solid var(--border);border-radius:8px;padding:8px 12px;\
box-shadow:0 4px 18px rgba(0,0,0,.18);font-size:12px}\
#tl-detail h3{margin:0 0 4px;font-size:13px}#tl-detail pre{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}\
#tl-detail button{float:right;border:0;background:none;color:var(--muted);font-size:16px;cursor:pointer}\
footer{color:var(--muted);font-size:12px;margin-top:18px}";

/// Shows an element's details on hover; a click pins them (another click elsewhere, or
/// the close button, unpins).
pub(super) const SCRIPT: &str = "(()=>{const D=JSON.parse(document.getElementById('tl-data').textContent);\
const box=document.getElementById('tl-detail'),pre=box.querySelector('pre'),h=box.querySelector('h3');\
const plot=document.querySelector('svg.plot');let pinned=null;\
function show(el){const d=D[+el.dataset.i];if(!d)return;h.textContent=d.kind+' at seq '+d.seq+(d.ts?' · '+d.ts:'');\
pre.textContent=JSON.stringify(d,null,2);box.hidden=false;}\
plot.addEventListener('mouseover',e=>{const el=e.target.closest('[data-i]');if(el&&!pinned)show(el);});\
plot.addEventListener('click',e=>{const el=e.target.closest('[data-i]');if(pinned)pinned.classList.remove('pinned');\
pinned=el;if(el){el.classList.add('pinned');show(el);}});\
box.querySelector('button').addEventListener('click',()=>{if(pinned)pinned.classList.remove('pinned');\
pinned=null;box.hidden=true;});})();";
