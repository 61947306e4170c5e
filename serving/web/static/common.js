// What the origin's page scripts share (window.newsroom): the reader token's localStorage key and its reading
// (sign-in, For you and the reader's controls), the page's strings, and the story card that the For you feed
// (foryou.js) and the For you slice of the top page (reader.js) build from a JSON feed item. Cards are built with
// DOM APIs and textContent only: nothing from an article is ever parsed as markup. base.html loads this file before
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

  // A For you reason in the page's language (data-msg-reason-{kind} on #reader: serving/web/messages.py
  // REASON_MESSAGES): a place or a followed entity by its name ("news from United States"), never a raw code; the
  // reason's words if the page has no string for its kind.
  function reasonText(it) {
    var reason = String(it.reason || "");
    var kind = reason.split(":")[0];
    if (kind === "follows" && reason.indexOf("follows:source/") === 0) kind = "follows-source";
    var reader = document.getElementById("reader");
    var text = reader && reader.getAttribute("data-msg-reason-" + kind.replace(/_/g, "-"));
    if (text && (text.indexOf("{name}") < 0 || it.reason_name)) return text.split("{name}").join(String(it.reason_name));
    var words = it.reason_name ? kind + " " + it.reason_name : reason.replace(":", " ");
    return words.replace(/_/g, " ");
  }

  // One feed item as <li class="story" data-story-id>: the representative's headline linking to the story page,
  // then the caller's ``extras`` (nodes; a null one is skipped), then "{why} {reason}" when the item has a reason.
  function storyItem(it, why, extras) {
    var rep = it.representative || {};
    var li = el("li", null, "story");
    li.setAttribute("data-story-id", it.story_id);
    var h = el("h3");
    var a = el("a", rep.title);
    a.href = "/stories/" + encodeURIComponent(it.story_id);
    h.appendChild(a);
    li.appendChild(h);
    (extras || []).forEach(function (node) { if (node) li.appendChild(node); });
    if (it.reason) li.appendChild(el("p", why + " " + reasonText(it), "reason"));
    return li;
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
    TOKEN_KEY: TOKEN_KEY, token: token, el: el, messages: messages, problemText: problemText, storyItem: storyItem
  };
})();
