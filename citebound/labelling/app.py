"""The labelling page of ``citebound label``: a FastAPI app on 127.0.0.1 (the same stack as ``citebound
serve``) over a :class:`~citebound.labelling.store.LabelSession`. One self-contained page, no external assets.

Other sites cannot drive it: every request must name this server in its ``Host`` header (loopback names,
or the ``--host`` given), so a DNS-rebinding page is refused; every state-changing request must carry
the per-session token the page was served with (``X-Citebound-Token``) and, where the browser sends
one, an ``Origin`` of this server; bodies and notes are bounded.

Keys: ``s`` or ``1`` supported, ``u`` or ``2`` unsupported, ``c`` or ``3`` can't tell, ``z`` or Backspace
undo, ``n`` to write a note, ``h`` to show the verifier's score (hidden by default).
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from citebound.labelling.store import MAX_NOTE_CHARS, LabelError, LabelSession
from citebound.serving.models import Text

PAGE = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>citebound label</title>
<meta name="citebound-token" content="__TOKEN__">
<style>
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f6f8fa;color:#1f2328}
header{background:#fff;border-bottom:1px solid #d0d7de;padding:12px 24px;display:flex;gap:24px;align-items:center}
h1{font-size:19px;margin:0}.progress{color:#57606a}
main{display:grid;grid-template-columns:1fr 1fr 320px;gap:16px;padding:16px 24px}
section{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:14px 16px;min-width:0}
h2{font-size:14px;text-transform:uppercase;letter-spacing:.04em;color:#57606a;margin:0 0 8px}
.context,.passage{white-space:pre-wrap;max-height:60vh;overflow:auto}
.sentence{background:#fff8c5;outline:2px solid #d4a72c;border-radius:3px}
mark.best{background:#ddf4ff;outline:2px solid #0969da;border-radius:3px}
.claim{font-weight:600;margin-bottom:8px}
.buttons{display:flex;gap:8px;flex-wrap:wrap;margin:10px 0}
button{font:inherit;padding:6px 12px;border-radius:6px;border:1px solid #d0d7de;background:#f6f8fa;cursor:pointer}
button.sup{background:#1a7f37;color:#fff}button.uns{background:#cf222e;color:#fff}button.ct{background:#6e7781;color:#fff}
kbd{font-size:12px;border:1px solid #d0d7de;border-radius:4px;padding:0 4px;background:#fff;color:#1f2328}
textarea{width:100%;box-sizing:border-box;min-height:48px;font:inherit}
.panel dt{color:#57606a;font-size:13px}.panel dd{margin:0 0 8px;font-weight:600}
.warn{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px;font-size:13px}
#next-steps{white-space:pre-wrap;overflow-wrap:anywhere;max-width:100%;font-size:12px;background:#f6f8fa;padding:8px;
 border-radius:6px}
.error{color:#cf222e}.score{color:#57606a}
</style></head><body>
<header><h1>citebound label</h1><span class="progress" id="progress"></span><span id="labeller"></span></header>
<main>
<section><h2>The answer</h2><div class="claim" id="claim"></div><div class="context" id="context"></div></section>
<section><h2>The cited passage <span id="cited"></span></h2><div class="passage" id="passage"></div>
<div class="buttons">
<button class="sup" id="b-supported"><kbd>S</kbd> supported</button>
<button class="uns" id="b-unsupported"><kbd>U</kbd> unsupported</button>
<button class="ct" id="b-cant_tell"><kbd>C</kbd> can't tell</button>
<button id="b-undo"><kbd>Z</kbd> undo</button>
<button id="b-score"><kbd>H</kbd> show score</button></div>
<label>Note (<kbd>N</kbd>; optional)<textarea id="note"></textarea></label>
<div class="score" id="score" hidden></div><div class="error" id="error"></div></section>
<section class="panel"><h2>Calibration so far</h2><dl id="panel"></dl><div class="warn" id="warning" hidden></div>
<div id="next" hidden><h2>Next</h2><p>Every citation of the sample is labelled. Stop this page (Ctrl-C), then:</p>
<pre id="next-steps"></pre></div></section>
</main>
<script>
let state = null;
const $ = (id) => document.getElementById(id);
function esc(s){return s.replace(/[&<>"]/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"}[c]));}
const TOKEN = document.querySelector('meta[name="citebound-token"]').content;
async function call(method, path, body){
  const r = await fetch(path, {method, headers: {"content-type": "application/json", "x-citebound-token": TOKEN},
                               body: body ? JSON.stringify(body) : undefined});
  const data = await r.json();
  if (!r.ok) { $("error").textContent = data.detail || r.statusText; return null; }
  $("error").textContent = ""; return data;
}
function render(s){
  state = s;
  $("progress").textContent = `${s.position} of ${s.sample_size} labelled`;
  $("labeller").textContent = `labeller: ${s.labeller}`;
  $("score").hidden = true; $("note").value = "";
  const it = s.item;
  if (!it) { $("claim").textContent = "Every citation of the sample is labelled.";
             $("context").textContent = ""; $("passage").textContent = ""; $("cited").textContent = ""; }
  else {
    $("claim").textContent = it.claim;
    const a = it.answer;
    $("context").innerHTML = esc(a.slice(0, it.sentence_start)) + '<span class="sentence" id="sentence">' +
      esc(a.slice(it.sentence_start, it.sentence_end)) + "</span>" + esc(a.slice(it.sentence_end));
    const p = it.passage;
    $("passage").innerHTML = esc(p.slice(0, it.window_start)) + '<mark class="best" id="best">' +
      esc(p.slice(it.window_start, it.window_end)) + "</mark>" + esc(p.slice(it.window_end));
    $("cited").textContent = `[${it.cited}]`;
    $("sentence").scrollIntoView({block: "center"}); $("best").scrollIntoView({block: "center"});
  }
  const pn = s.panel;
  const tau = pn.tau === null ? "not finite yet" : pn.tau.toFixed(4);
  const pc = (x) => (100 * x).toFixed(1);
  const f = pn.flag_rate;
  const fr = f ? `${pc(f.estimate)}% (95% CI ${pc(f.ci_low)}–${pc(f.ci_high)}%)` : "–";
  $("panel").innerHTML = `<dt>labelled</dt><dd id="p-labelled">${pn.labelled} of ${pn.sample_size}</dd>` +
    `<dt>unsupported found</dt><dd id="p-unsupported">${pn.unsupported}</dd>` +
    `<dt>supported / can't tell</dt><dd>${pn.supported} / <span id="p-cant">${pn.cant_tell}</span></dd>` +
    `<dt>tau in force${esc(pn.in_force ? " (" + pn.in_force + ")" : "")} at alpha = ${pn.alpha}</dt><dd id="p-tau">${tau}</dd>` +
    `<dt>guarantee</dt><dd>${esc(pn.guarantee || "–")}</dd><dt>expected flag rate</dt><dd id="p-flag">${fr}</dd>`;
  $("warning").hidden = !pn.warning; $("warning").textContent = pn.warning;
  $("next").hidden = !s.done; $("next-steps").textContent = (s.next_steps || []).join("\\n");
}
async function label(j){ if (state && state.item) { const s = await call("POST", "/api/label",
  {item_id: state.item.item_id, judgement: j, note: $("note").value}); if (s) render(s); } }
async function undo(){ const s = await call("POST", "/api/undo"); if (s) render(s); }
async function showScore(){ if (!state || !state.item) return;
  const r = await call("GET", "/api/score?item_id=" + encodeURIComponent(state.item.item_id));
  if (r) { $("score").hidden = false; $("score").textContent = `verifier score: ${r.score.toFixed(4)}`; } }
for (const j of ["supported", "unsupported", "cant_tell"]) $("b-" + j).onclick = () => label(j);
$("b-undo").onclick = undo; $("b-score").onclick = showScore;
document.addEventListener("keydown", (e) => {
  if (e.target === $("note")) { if (e.key === "Escape") $("note").blur(); return; }
  const k = e.key.toLowerCase();
  if (k === "s" || k === "1") label("supported");
  else if (k === "u" || k === "2") label("unsupported");
  else if (k === "c" || k === "3") label("cant_tell");
  else if (k === "z" || e.key === "Backspace") { e.preventDefault(); undo(); }
  else if (k === "h") showScore();
  else if (k === "n") { e.preventDefault(); $("note").focus(); }
});
call("GET", "/api/state").then(s => s && render(s));
</script></body></html>
"""


MAX_BODY_BYTES = 16 * 1024


class LabelIn(BaseModel):
    item_id: Text = Field(max_length=400)
    judgement: Literal["supported", "unsupported", "cant_tell"]
    note: Text = Field("", max_length=MAX_NOTE_CHARS)


def allowed_hosts(host: str, port: int) -> set[str]:
    """The Host header values this server answers: loopback names (and the --host given) with the port."""
    names = {"127.0.0.1", "localhost", "[::1]", host if ":" not in host else f"[{host}]"}
    return {f"{n}:{port}" for n in names} | ({n for n in names} if port == 80 else set())


NO_FRAMING = {"X-Frame-Options": "DENY", "Content-Security-Policy": "frame-ancestors 'none'",
              "X-Content-Type-Options": "nosniff"}


def create_label_app(session: LabelSession, host: str = "127.0.0.1", port: int = 8766, token: str | None = None):
    import secrets

    from fastapi import FastAPI, Request
    from fastapi.responses import HTMLResponse, JSONResponse

    token = token or secrets.token_urlsafe(24)
    hosts = allowed_hosts(host, port)
    origins = {f"http://{h}" for h in hosts}
    app = FastAPI(title="citebound label", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.token = token

    def fail(e: LabelError) -> JSONResponse:
        return JSONResponse({"detail": str(e)}, status_code=409)

    @app.middleware("http")
    async def guard_requests(request: Request, call_next):
        if request.headers.get("host", "") not in hosts:
            return JSONResponse({"detail": f"Host {request.headers.get('host')!r} is not this server "
                                           f"(expected one of {sorted(hosts)})"}, status_code=421)
        if request.method != "GET":
            origin = request.headers.get("origin")
            if origin is not None and origin not in origins:
                return JSONResponse({"detail": f"Origin {origin!r} may not change labels"}, status_code=403)
            if not secrets.compare_digest(request.headers.get("x-citebound-token", ""), token):
                return JSONResponse({"detail": "missing or wrong X-Citebound-Token: reload the page"}, status_code=403)
            size = request.headers.get("content-length")
            if size is None or not size.isdigit() or int(size) > MAX_BODY_BYTES:
                return JSONResponse({"detail": f"a body of at most {MAX_BODY_BYTES} bytes, with its Content-Length"},
                                    status_code=413)
        response = await call_next(request)
        # no other origin may frame the page (one click in a frame would write a label)
        response.headers.update(NO_FRAMING)
        return response

    @app.get("/", response_class=HTMLResponse)
    async def page() -> str:
        return PAGE.replace("__TOKEN__", token)

    @app.get("/api/state")
    async def state() -> dict[str, Any]:
        return session.state()

    @app.post("/api/label")
    async def label(body: LabelIn):
        try:
            return session.label(body.item_id, body.judgement, body.note)
        except LabelError as e:
            return fail(e)

    @app.post("/api/undo")
    async def undo():
        return session.undo()

    @app.get("/api/score")
    async def score(item_id: str):
        try:
            return {"item_id": item_id, "score": session.score(item_id)}
        except LabelError as e:
            return fail(e)

    return app
