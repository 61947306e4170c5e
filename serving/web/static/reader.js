// The reader's controls on the shared pages (every page loads this file; the server-rendered bytes are the same for
// every reader, and everything personal happens here, in the reader's browser, after the page has loaded):
// - "new stories" pill: polls the shared /v1/editions/{e}/version (no credentials) every data-poll-s seconds and
//   offers a reload once the page's section has a newer version than the one rendered (data-version);
// - signed in (a token in localStorage, from /sign-in or pasted on For you): who is signed in and sign out; on each
//   card "Follow {publisher}", "Hide {publisher}", "Fewer like this" (POST/DELETE /v1/me/...), the state read from
//   GET /v1/me/profile; "Follow {topic}" on section and topic pages; cards of hidden sources are folded away;
// - read beacon: opening a card (any of its links) queues a CLICK ReadEvent in localStorage; the queue is sent in
//   batches of at most 100 to POST /v1/events two seconds after the last click, when the page is hidden (a
//   keepalive request that outlives the page) and on the next page's load. An event leaves the queue only once
//   the origin accepted or rejected it, so it may be sent twice (a keepalive answer is never seen), which the
//   origin folds once (reads are keyed by event_id);
// - For you slice on the top page: after the load event, GET /v1/feed/for-you/cards?limit=5 fills #foryou-slice
//   with the edition pages' own cards (one card renderer, serving/web/foryou_cards.py).
// The token goes only into the Authorization header of the private API (credentials "omit": no cookie is ever
// sent or set). Text from the API is set with textContent, never parsed as markup.
(function () {
  "use strict";
  var QUEUE = "newsroom.events";
  var QUEUE_MAX = 500;
  var BATCH = 100;
  var root = document.getElementById("reader");
  if (!root) return;
  var edition = root.getAttribute("data-edition") || "";
  var profile = null;
  var flushTimer = null;
  var sending = false;

  var common = window.newsroom; // common.js: the token, string and card helpers foryou.js shares
  var KEY = common.TOKEN_KEY;
  var token = common.token;
  var el = common.el;
  var msg = common.messages(root);

  function store(name, value) {
    try {
      if (value === undefined) return window.localStorage.getItem(name);
      if (value === null) window.localStorage.removeItem(name); else window.localStorage.setItem(name, value);
    } catch (e) { return null; }
    return null;
  }

  function readerName(tok) {
    try {
      var b = tok.split(".")[0].replace(/-/g, "+").replace(/_/g, "/");
      return JSON.parse(window.atob(b + "===".slice((b.length + 3) % 4))).sub || "";
    } catch (e) { return ""; }
  }

  function api(method, path, body, keepalive) {
    var init = {
      method: method,
      headers: { "Authorization": "Bearer " + token(), "Accept": "application/json" },
      credentials: "omit",
      cache: "no-store",
      keepalive: !!keepalive
    };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (r) {
      return r.text().then(function (t) {
        var doc = null;
        try { doc = t ? JSON.parse(t) : null; } catch (e) { doc = null; }
        if (!r.ok) { var err = new Error(String(r.status)); err.status = r.status; err.body = doc; throw err; }
        return doc;
      });
    });
  }

  // --- "new stories" pill -----------------------------------------------------------------------------------------

  function pill() {
    var mine = parseInt(root.getAttribute("data-version") || "", 10);
    var section = root.getAttribute("data-section");
    var every = parseInt(root.getAttribute("data-poll-s") || "60", 10) * 1000;
    if (!edition || !section || isNaN(mine)) return;
    var shown = false;
    function poll() {
      if (document.hidden || shown) return;
      fetch("/v1/editions/" + encodeURIComponent(edition) + "/version", { credentials: "omit", cache: "no-store" })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (doc) {
          var now = doc && doc.sections ? doc.sections[section] : null;
          if (typeof now !== "number" || now <= mine || shown) return;
          shown = true;
          var p = el("p", null, "new-stories");
          p.id = "new-stories";
          p.setAttribute("role", "status");
          var b = el("button", msg("new-stories", "New stories: show them"));
          b.type = "button";
          b.addEventListener("click", function () { window.location.reload(); });
          p.appendChild(b);
          var main = document.getElementById("main");
          main.insertBefore(p, main.firstChild);
        })
        .catch(function () { /* offline: try again at the next tick */ });
    }
    setInterval(poll, every);
  }

  // --- read beacon --------------------------------------------------------------------------------------------------

  function queued() {
    try { var q = JSON.parse(store(QUEUE) || "[]"); return Array.isArray(q) ? q : []; } catch (e) { return []; }
  }

  function eventId() {
    var a = new Uint8Array(12);
    window.crypto.getRandomValues(a);
    return "w-" + Array.prototype.map.call(a, function (x) { return ("0" + x.toString(16)).slice(-2); }).join("");
  }

  function queueRead(card) {
    var q = queued();
    q.push({
      event_id: eventId(),
      kind: "CLICK",
      edition: edition,
      story_id: card.getAttribute("data-story-id"),
      article_id: card.getAttribute("data-rep-article-id") || null,
      at: Date.now()
    });
    store(QUEUE, JSON.stringify(q.slice(-QUEUE_MAX)));
    clearTimeout(flushTimer);
    flushTimer = setTimeout(function () { flush(false); }, 2000);
  }

  function flush(keepalive) {
    var q = queued();
    if (!q.length || !token() || (sending && !keepalive)) return;
    var batch = q.slice(0, BATCH);
    var ids = {};
    batch.forEach(function (e) { ids[e.event_id] = true; });
    sending = true;
    api("POST", "/v1/events", { events: batch }, keepalive)
      .then(function () { return true; }, function (err) { return err.status === 400; })  // 400: none was valid
      .then(function (done) {
        sending = false;
        if (!done) return;
        store(QUEUE, JSON.stringify(queued().filter(function (e) { return !ids[e.event_id]; })));
        if (queued().length) flush(false);
      });
  }

  // --- controls -----------------------------------------------------------------------------------------------------

  function has(list, value) { return (list || []).indexOf(value) >= 0; }

  function failed(node, err) {
    var note = el("span", msg("failed", "That did not work ({status}). Try again.", { status: common.problemText(err.body, err.status || err.message) }), "control-note");
    note.setAttribute("role", "status");
    node.appendChild(note);
  }

  function followButton(kind, value, name) {
    var b = el("button", null, "control follow");
    b.type = "button";
    b.setAttribute("data-follow-kind", kind);
    b.setAttribute("data-follow-value", value);
    function paint() {
      var on = profile && has(profile.follows[{ topic: "topics", source: "sources", place: "places", entity: "entities", storyline: "storylines" }[kind]], value);
      b.setAttribute("aria-pressed", on ? "true" : "false");
      b.textContent = on ? msg("unfollow", "Unfollow {name}", { name: name }) : msg("follow", "Follow {name}", { name: name });
    }
    b.addEventListener("click", function () {
      var on = b.getAttribute("aria-pressed") === "true";
      var req = on
        ? api("DELETE", "/v1/me/follows?kind=" + encodeURIComponent(kind) + "&value=" + encodeURIComponent(value))
        : api("POST", "/v1/me/follows", { kind: kind, value: value });
      req.then(function (doc) { profile = doc; paintAll(); }, function (err) { failed(b.parentNode, err); });
    });
    b.paint = paint;
    paint();
    return b;
  }

  function foldHidden(card) {
    var pub = card.getAttribute("data-publisher-id");
    var name = card.getAttribute("data-publisher-name") || pub;
    var article = card.querySelector("article");
    var note = card.querySelector(".hidden-note");
    var hidden = profile && has(profile.hidden_sources, pub);
    if (article) article.hidden = !!hidden;
    if (hidden && !note) {
      note = el("p", msg("hidden", "Stories from {name} are hidden.", { name: name }) + " ", "hidden-note");
      var undo = el("button", msg("unhide", "Show {name} again", { name: name }), "control unhide");
      undo.type = "button";
      undo.addEventListener("click", function () {
        api("DELETE", "/v1/me/hidden-sources?source=" + encodeURIComponent(pub))
          .then(function (doc) { profile = doc; paintAll(); }, function (err) { failed(note, err); });
      });
      note.appendChild(undo);
      card.appendChild(note);
    } else if (!hidden && note) {
      card.removeChild(note);
    }
  }

  function cardControls(card) {
    var pub = card.getAttribute("data-publisher-id");
    var name = card.getAttribute("data-publisher-name") || pub;
    var sid = card.getAttribute("data-story-id");
    var article = card.querySelector("article");
    if (!pub || !sid || !article || article.querySelector(".controls")) return;
    var box = el("p", null, "controls");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", msg("controls", "Your controls for this story"));
    box.appendChild(followButton("source", pub, name));
    var hide = el("button", msg("hide", "Hide {name}", { name: name }), "control hide");
    hide.type = "button";
    hide.addEventListener("click", function () {
      api("POST", "/v1/me/hidden-sources", { source: pub })
        .then(function (doc) { profile = doc; paintAll(); }, function (err) { failed(box, err); });
    });
    box.appendChild(hide);
    var fewer = el("button", msg("fewer", "Fewer like this"), "control fewer");
    fewer.type = "button";
    fewer.addEventListener("click", function () {
      api("POST", "/v1/me/fewer-like-this", { story_id: sid, edition: edition })
        .then(function (doc) { profile = doc; paintAll(); }, function (err) { failed(box, err); });
    });
    fewer.paint = function () {
      var done = profile && has(profile.fewer_like, sid);
      fewer.disabled = !!done;
      fewer.textContent = done ? msg("fewer-done", "You will see fewer stories like this.") : msg("fewer", "Fewer like this");
    };
    box.appendChild(fewer);
    article.appendChild(box);
  }

  function paintAll() {
    var buttons = document.querySelectorAll("button.control");
    for (var i = 0; i < buttons.length; i++) if (buttons[i].paint) buttons[i].paint();
    var cards = document.querySelectorAll("main li.story[data-publisher-id]");
    for (var j = 0; j < cards.length; j++) foldHidden(cards[j]);
  }

  function signedIn(tok) {
    while (root.firstChild) root.removeChild(root.firstChild);
    root.appendChild(el("span", msg("signed-in", "Signed in as {reader}", { reader: readerName(tok) }), "who"));
    root.appendChild(document.createTextNode(" "));
    var out = el("button", msg("sign-out", "Sign out"), "sign-out");
    out.type = "button";
    out.addEventListener("click", function () { store(KEY, null); store(QUEUE, null); window.location.reload(); });
    root.appendChild(out);
    var kind = root.getAttribute("data-follow-kind");
    if (kind) {
      root.appendChild(document.createTextNode(" "));
      root.appendChild(followButton(kind, root.getAttribute("data-follow-value"), root.getAttribute("data-follow-name")));
    }
    var cards = document.querySelectorAll("main li.story[data-publisher-id]");
    for (var i = 0; i < cards.length; i++) cardControls(cards[i]);
    api("GET", "/v1/me/profile").then(function (doc) { profile = doc; paintAll(); }, function () { /* shown unpressed */ });
  }

  // --- For you slice ------------------------------------------------------------------------------------------------

  // The reader's first five For you stories as the edition pages' own cards (common.js fetchCards: labels such as
  // BREAKING, relative times, coverage, Read at, Full Coverage, why), then the same controls as every card.
  function slice() {
    var box = document.getElementById("foryou-slice");
    if (!box || !edition) return;
    common.fetchCards(edition, "&limit=5").then(function (res) {
      if (!res.ok) return;  // no slice: the shared page is complete without it
      var list = box.querySelector("ol");
      common.cards(res.html).forEach(function (li) { list.appendChild(li); });
      box.hidden = !list.children.length;
      document.dispatchEvent(new window.CustomEvent("newsroom:cards", { detail: { root: list } }));
    }).catch(function () { /* offline: the shared page is complete without it */ });
  }

  // --- wiring -------------------------------------------------------------------------------------------------------

  pill();
  var tok = token();
  if (!tok) return;
  signedIn(tok);
  // cards a script added after load (For you's page, foryou.js) get the same controls
  document.addEventListener("newsroom:cards", function () {
    var cards = document.querySelectorAll("main li.story[data-publisher-id]");
    for (var i = 0; i < cards.length; i++) cardControls(cards[i]);
    paintAll();
  });
  document.addEventListener("click", function (ev) {
    var a = ev.target.closest ? ev.target.closest("a[href]") : null;
    var card = a ? a.closest("main li.story[data-story-id]") : null;
    if (card && edition) queueRead(card);
  }, true);
  document.addEventListener("visibilitychange", function () { if (document.hidden) flush(true); });
  window.addEventListener("pagehide", function () { flush(true); });
  if (document.readyState === "complete") { slice(); flush(false); }
  else window.addEventListener("load", function () { slice(); flush(false); });
})();
