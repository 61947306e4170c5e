// Relative times on shared pages ("5 min ago"). The server writes every time as an absolute
// <time datetime="..." data-relative>2025-03-01 11:50 UTC</time>: a shared page is the same bytes for every
// reader for its whole TTL, so only the reader's browser, at its own clock, may word it relatively. The absolute
// text moves to the title (hover) and stays the text without script. Refreshed every minute.
(function () {
  "use strict";
  var lang = document.documentElement.lang || "en";
  var fmt = window.Intl && Intl.RelativeTimeFormat ? new Intl.RelativeTimeFormat(lang, { numeric: "auto", style: "short" }) : null;
  var STEPS = [["second", 60], ["minute", 60], ["hour", 24], ["day", 7]];

  function words(ms) {
    var v = Math.round((ms - Date.now()) / 1000);
    if (Math.abs(v) < 45) return fmt.format(0, "minute"); // "this minute": no ticking seconds
    for (var i = 0; i < STEPS.length; i++) {
      if (Math.abs(v) < STEPS[i][1]) return fmt.format(v, STEPS[i][0]);
      v = Math.round(v / STEPS[i][1]);
    }
    return null; // older than a week: the absolute date says more
  }

  function update() {
    var els = document.querySelectorAll("time[data-relative]");
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      var ms = Date.parse(el.getAttribute("datetime"));
      if (isNaN(ms)) continue;
      if (!el.hasAttribute("data-absolute")) el.setAttribute("data-absolute", el.textContent);
      var text = words(ms);
      el.textContent = text || el.getAttribute("data-absolute");
      el.title = el.getAttribute("data-absolute");
    }
  }

  if (!fmt) return;
  update();
  setInterval(update, 60000);
  document.addEventListener("newsroom:cards", update); // cards a script added (For you: foryou.js)
})();
