// For you shell (/e/{edition}/for-you). The reader token lives in this browser's localStorage only: it is sent to
// the JSON For you API in an Authorization header, never put in a URL, a page or a cookie (fetch with
// credentials "omit"). Items are built with DOM APIs and textContent (never parsed markup): nothing from an article is
// ever parsed as HTML. No inline script anywhere: the page's Content-Security-Policy is script-src 'self'.
(function () {
  "use strict";
  var root = document.getElementById("foryou");
  if (!root) return;
  var edition = root.getAttribute("data-edition");
  var form = document.getElementById("token-form");
  var input = document.getElementById("token-input");
  var forget = document.getElementById("token-forget");
  var help = document.getElementById("token-help");
  var status = document.getElementById("feed-status");
  var list = document.getElementById("feed");
  var more = document.getElementById("feed-more");
  var cursor = null;

  var common = window.newsroom; // common.js: the token, string and card helpers reader.js shares
  var KEY = common.TOKEN_KEY;
  var token = common.token;
  var el = common.el;
  // The page's strings in its language (serving/web/messages.json, as data-msg-* attributes); English if absent.
  var msg = common.messages(root);

  // The count in the page language's plural category (data-msg-count-{one,few,many,...}: Intl.PluralRules picks it;
  // a browser without it tells only one from other).
  var lang = document.documentElement.lang || "en";
  var rules = window.Intl && window.Intl.PluralRules ? new window.Intl.PluralRules(lang) : null;
  function countText(n) {
    var one = n === 1 || (n === 0 && root.getAttribute("data-zero-is-one") === "1");
    var fallback = one ? msg("count-one", "{n} story for you.") : msg("count-other", "{n} stories for you.");
    var name = "count-" + (rules ? rules.select(n) : one ? "one" : "other");
    return msg(name, fallback, { n: n.toLocaleString(lang) });
  }

  function safeUrl(url) {
    return typeof url === "string" && /^https?:\/\//i.test(url) ? url : null;
  }

  function item(it) {
    var rep = it.representative || {};
    var meta = el("p", null, "meta");
    meta.appendChild(el("span", rep.publisher_name || rep.publisher_id, "publisher"));
    meta.appendChild(document.createTextNode(" · "));
    var t = el("time", (rep.published_at || "").slice(0, 16).replace("T", " ") + " UTC");
    t.setAttribute("datetime", rep.published_at || "");
    meta.appendChild(t);
    var url = safeUrl(rep.url);
    var p = null;
    if (url) {
      p = el("p", null, "coverage");
      var out = el("a", msg("read-at", "Read at {publisher}", { publisher: rep.publisher_name || rep.publisher_id }));
      out.href = url;
      out.rel = "noopener noreferrer";
      p.appendChild(out);
    }
    return common.storyItem(it, msg("why", "Why:"), [meta, p]);
  }

  function load(reset) {
    var tok = token();
    forget.hidden = !tok;
    form.hidden = !!tok;  // signed in: no empty token box, only the way to forget it
    if (help) help.hidden = !!tok;
    if (!tok) {
      status.textContent = msg("paste", "Paste your reader token above to see your stories.");
      var signin = document.getElementById("reader-signin");  // a local stack: signing in is one click away
      if (signin) {
        status.appendChild(document.createTextNode(" "));
        var a = document.createElement("a");
        a.href = signin.getAttribute("href");
        a.textContent = signin.textContent;
        status.appendChild(a);
      }
      list.textContent = "";
      more.hidden = true;
      return;
    }
    if (reset) { cursor = null; list.textContent = ""; }
    status.textContent = msg("loading", "Loading your stories…");
    var url = "/v1/feed/for-you?edition=" + encodeURIComponent(edition) + (cursor ? "&cursor=" + encodeURIComponent(cursor) : "");
    fetch(url, { headers: { "Authorization": "Bearer " + tok, "Accept": "application/json" }, credentials: "omit", cache: "no-store" })
      .then(function (r) {
        return r.json().then(function (body) { return { ok: r.ok, status: r.status, body: body }; });
      })
      .then(function (res) {
        if (!res.ok) {
          status.textContent = res.status === 401
            ? msg("rejected", "Your token was not accepted ({detail}). Paste a new one.", { detail: common.problemText(res.body, res.status) })
            : msg("unavailable", "For you is unavailable right now ({status}). Try again shortly.", { status: common.problemText(res.body, res.status) });
          more.hidden = true;
          return;
        }
        (res.body.items || []).forEach(function (it) { list.appendChild(item(it)); });
        cursor = res.body.next_cursor;
        more.hidden = !cursor;
        status.textContent = countText(list.children.length);
      })
      .catch(function () { status.textContent = msg("unreachable", "For you could not be reached. Try again shortly."); });
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var value = input.value.trim();
    input.value = "";
    if (!value) return;
    try { window.localStorage.setItem(KEY, value); } catch (e) { status.textContent = msg("cannot-keep", "This browser cannot keep the token."); return; }
    load(true);
  });
  forget.addEventListener("click", function () {
    try { window.localStorage.removeItem(KEY); } catch (e) { /* nothing kept */ }
    load(true);
  });
  more.addEventListener("click", function () { load(false); });
  load(true);
})();
