// For you shell (/e/{edition}/for-you). The reader token lives in this browser's localStorage only: it is sent to
// the private For you API in an Authorization header, never put in a URL, a page or a cookie (fetch with
// credentials "omit"). Signed in (a token here: local sign-in or a pasted one), the page shows the feed and no token
// box (Sign out is in the reader bar, reader.js); signed out, the box to paste a token and, on a local stack, the way
// to Sign in. The cards are the edition pages' own, rendered by the server (GET /v1/feed/for-you/cards, Jinja-escaped):
// one card renderer for every page. No inline script anywhere: the page's Content-Security-Policy is script-src 'self'.
(function () {
  "use strict";
  var root = document.getElementById("foryou");
  if (!root) return;
  var edition = root.getAttribute("data-edition");
  var box = document.getElementById("token-box");
  var form = document.getElementById("token-form");
  var input = document.getElementById("token-input");
  var status = document.getElementById("feed-status");
  var list = document.getElementById("feed");
  var more = document.getElementById("feed-more");
  var cursor = null;

  var common = window.newsroom; // common.js: the token, string and card helpers reader.js shares
  var KEY = common.TOKEN_KEY;
  var token = common.token;
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

  function load(reset) {
    var tok = token();
    box.hidden = !!tok;  // signed in: no token box at all (Sign out is in the reader bar); signed out: paste or sign in
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
    common.fetchCards(edition, cursor ? "&cursor=" + encodeURIComponent(cursor) : "")
      .then(function (res) {
        if (!res.ok) {
          if (res.status === 401) box.hidden = false;  // a refused token: paste another one
          status.textContent = res.status === 401
            ? msg("rejected", "Your token was not accepted ({detail}). Paste a new one.", { detail: common.problemText(res.body, res.status) })
            : msg("unavailable", "For you is unavailable right now ({status}). Try again shortly.", { status: common.problemText(res.body, res.status) });
          more.hidden = true;
          return;
        }
        common.cards(res.html).forEach(function (li) { list.appendChild(li); });
        cursor = res.next;
        more.hidden = !cursor;
        status.textContent = countText(list.children.length);
        // the cards' times in words at this browser's clock (reltime.js), the signed-in reader's controls (reader.js)
        document.dispatchEvent(new window.CustomEvent("newsroom:cards", { detail: { root: list } }));
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
  more.addEventListener("click", function () { load(false); });
  load(true);
})();
