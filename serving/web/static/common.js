// What the origin's page scripts share (window.newsroom): the reader token's localStorage key and its reading
// (sign-in, For you and the reader's controls), the page's strings, and the For you cards that the For you feed
// (foryou.js) and the For you slice of the top page (reader.js) take from the server (the edition pages' own card
// renderer, Jinja-escaped: nothing from an article is ever markup of its own). base.html loads this file before
// every other script (deferred scripts run in document order), so they find window.newsroom when they run.
(function () {
  "use strict";
  // The token lives in this browser's localStorage only: sent in an Authorization header, never in a URL or cookie.
  var TOKEN_KEY = "newsroom.readerToken";
  // The edition the reader last browsed (a link choice kept in this browser only, never sent): a page without an
  // edition of its own (Full Coverage, a storyline) leads its brand link back there instead of to "/".
  var EDITION_KEY = "newsroom.edition";
  (function rememberEdition() {
    try {
      var reader = document.getElementById("reader");
      var current = reader && reader.getAttribute("data-edition");
      if (current && /^[a-z]{2}-[a-z]{2,3}$/.test(current)) {
        window.localStorage.setItem(EDITION_KEY, current);
        return;
      }
      var chosen = window.localStorage.getItem(EDITION_KEY);
      if (!chosen || !/^[a-z]{2}-[a-z]{2,3}$/.test(chosen)) return;
      document.querySelectorAll("a[data-reader-edition]").forEach(function (a) { a.href = "/e/" + chosen + "/"; });
    } catch (e) { /* no storage: the brand keeps "/" */ }
  })();

  function token() {
    try { return window.localStorage.getItem(TOKEN_KEY); } catch (e) { return null; }
  }

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  // The strings of the page's language, given by the server as data-msg-{name} attributes of ``root``; the
  // fallback (English) if absent. ``{k}`` in a string is replaced by values[k].
  function messages(root) {
    return function msg(name, fallback, values) {
      var text = root.getAttribute("data-msg-" + name) || fallback;
      Object.keys(values || {}).forEach(function (k) { text = text.split("{" + k + "}").join(String(values[k])); });
      return text;
    };
  }

  // A page of For you cards as the server renders every edition page's cards (GET /v1/feed/for-you/cards:
  // web/_stories.html, Jinja-escaped, so parsing it as markup runs nothing from an article; the CSP forbids inline
  // script anyway): the <li class="story"> nodes, adopted into this document. One card renderer for every page: the
  // For you page (foryou.js) and the top page's For you slice (reader.js) insert these, never cards of their own.
  function cards(html) {
    var doc = new window.DOMParser().parseFromString(html, "text/html");
    return Array.prototype.map.call(doc.querySelectorAll("ol.stories > li.story"), function (li) {
      return document.importNode(li, true);
    });
  }

  // GET a page of For you cards for the signed-in reader: resolves {ok, html, next} or {ok: false, status, body}.
  function fetchCards(edition, query) {
    var url = "/v1/feed/for-you/cards?edition=" + encodeURIComponent(edition) + (query || "");
    return fetch(url, { headers: { "Authorization": "Bearer " + token(), "Accept": "text/html" }, credentials: "omit", cache: "no-store" })
      .then(function (r) {
        if (r.ok) return r.text().then(function (html) { return { ok: true, html: html, next: r.headers.get("Newsroom-Next-Cursor") }; });
        return r.json().then(function (body) { return { ok: false, status: r.status, body: body }; },
                             function () { return { ok: false, status: r.status, body: null }; });
      });
  }

  // A problem answer of the API (RFC 9457) told in the page's language: the string the page carries for its code
  // (data-msg-problem-{code} on ``root`` or on #reader: serving/web/messages.py PROBLEM_MESSAGES), else ``fallback``
  // (the HTTP status): the problem's English detail is for developers and is never shown to a reader.
  function problemText(body, fallback, root) {
    var code = body && typeof body.code === "string" ? body.code.replace(/_/g, "-") : "";
    var name = "data-msg-problem-" + code;
    var reader = document.getElementById("reader");
    var text = code && ((root && root.getAttribute(name)) || (reader && reader.getAttribute(name)));
    return text || String(fallback);
  }

  window.newsroom = {
    TOKEN_KEY: TOKEN_KEY, token: token, el: el, messages: messages, problemText: problemText, cards: cards,
    fetchCards: fetchCards
  };
})();
