// Local sign-in (/sign-in, serving/web/signin.py): post the reader name as JSON, keep the token in this browser's
// localStorage (common.js's key, the one For you and reader.js read), go back to the page the reader came from. No cookie: the
// token travels only in the Authorization header reader.js adds to the private API.
(function () {
  "use strict";
  var KEY = window.newsroom.TOKEN_KEY; // common.js
  var form = document.getElementById("signin-form");
  if (!form) return;
  var status = document.getElementById("signin-status");
  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    var name = document.getElementById("signin-name").value.trim();
    fetch("/sign-in/token", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Accept": "application/json" },
      body: JSON.stringify({ reader: name }),
      credentials: "omit",
      cache: "no-store"
    })
      .then(function (r) { return r.json().then(function (body) { return { ok: r.ok, status: r.status, body: body }; }); })
      .then(function (res) {
        if (!res.ok || !res.body.token) throw new Error(window.newsroom.problemText(res.body, res.status, form));
        window.localStorage.setItem(KEY, res.body.token);
        var next = form.getAttribute("data-next") || "/";
        window.location.assign(next.charAt(0) === "/" && next.charAt(1) !== "/" ? next : "/");
      })
      .catch(function (e) {
        status.textContent = (form.getAttribute("data-msg-failed") || "Sign-in did not work ({detail}).").split("{detail}").join(String(e.message || e));
      });
  });
})();
