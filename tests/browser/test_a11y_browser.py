"""Every page kind of the reader web front end at desktop (1280x900) and phone (390x844) size in chromium: a
screenshot of each in $NEWSROOM_TEST_ARTIFACTS/browser/ (CI keeps the folder as an artifact), and an automated
accessibility audit of what the browser actually rendered.

The audit (``AUDIT``, run in the page) is a small, explicit subset of WCAG 2.1 AA that a template or stylesheet
change can break, chosen over a vendored axe-core because nothing here may be downloaded and every rule should be
readable next to the test:
- landmarks: one ``main``, a banner (``header``), a content-info (``footer``), every ``nav`` named, one ``h1``, and
  the ``html`` element's ``lang`` set (1.3.1, 2.4.1, 3.1.1);
- text alternatives: every ``img`` has an ``alt`` attribute (decorative images say ``alt=""``) (1.1.1);
- contrast: every visible text run against its effective background (the first opaque ancestor background, white
  at the root) at least 4.5:1, 3:1 for large text (>= 24 px, or >= 18.66 px bold) (1.4.3);
- reflow: no horizontal scrolling at 390 px wide (1.4.10);
- keyboard: the first Tab lands on the skip link, and each of the next focus stops is visible on screen and shows a
  focus indicator (an outline or a box shadow) (2.4.1, 2.4.7).
"""

from __future__ import annotations

import pytest

from tests.browser.conftest import STORYLINE, TECH_STORY
from tests.serving.helpers import EDITION

VIEWPORTS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
PAGES = {
    "edition": f"/e/{EDITION}/",
    "section": f"/e/{EDITION}/tech",
    "story": f"/stories/{TECH_STORY}",
    "storyline": f"/storylines/en/{STORYLINE}",
    "topics": f"/e/{EDITION}/topics",
    "topic": None,  # the first topic the top page links (its id is the editions stage's, not ours)
    "for-you": f"/e/{EDITION}/for-you",
    "not-found": f"/e/{EDITION}/no-such-section",
}
FOCUS_STOPS = 12

AUDIT = r"""() => {
  const problems = [];
  const q = (s) => Array.from(document.querySelectorAll(s));
  const name = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '');
  if (!document.documentElement.lang) problems.push('html has no lang');
  if (q('main').length !== 1) problems.push(`${q('main').length} main landmarks`);
  if (q('body > header').length < 1) problems.push('no banner (header)');
  if (q('body > footer').length < 1) problems.push('no contentinfo (footer)');
  for (const n of q('nav')) if (!n.getAttribute('aria-label') && !n.getAttribute('aria-labelledby'))
    problems.push('unnamed nav');
  if (q('h1').length !== 1) problems.push(`${q('h1').length} h1 headings`);
  for (const img of q('img')) if (!img.hasAttribute('alt')) problems.push(`img without alt: ${img.src}`);
  const rgba = (c) => { const m = c.match(/[\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const lum = ([r, g, b]) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const background = (el) => { for (let e = el; e; e = e.parentElement) { const c = rgba(getComputedStyle(e).backgroundColor);
    if (c[3] >= 0.99) return c; } return [255, 255, 255, 1]; };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const seen = new Set();
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {
    const el = t.parentElement;
    if (!t.textContent.trim() || seen.has(el)) continue;
    seen.add(el);
    const st = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    if (st.visibility === 'hidden' || st.display === 'none' || box.width === 0 || box.height === 0) continue;
    if (el.closest('.skip') && document.activeElement !== el) continue;  // off screen until focused
    const fg = rgba(st.color), bg = background(el);
    const alpha = fg[3] * parseFloat(st.opacity || '1');
    const mixed = [0, 1, 2].map((i) => fg[i] * alpha + bg[i] * (1 - alpha));
    const [a, b] = [lum(mixed), lum(bg)].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    const size = parseFloat(st.fontSize), bold = parseInt(st.fontWeight, 10) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) problems.push(`contrast ${ratio.toFixed(2)} < ${need} on ${name(el)}: "${t.textContent.trim().slice(0, 40)}"`);
  }
  if (document.documentElement.scrollWidth > window.innerWidth + 1)
    problems.push(`horizontal scroll: ${document.documentElement.scrollWidth} > ${window.innerWidth}`);
  return problems;
}"""

FOCUSED = r"""() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const st = getComputedStyle(el), box = el.getBoundingClientRect();
  const indicated = (st.outlineStyle !== 'none' && parseFloat(st.outlineWidth) > 0) || st.boxShadow !== 'none';
  const visible = box.width > 0 && box.height > 0 && box.bottom > 0 && box.right > 0 &&
    box.left < window.innerWidth && st.visibility !== 'hidden';
  return {tag: el.tagName.toLowerCase(), cls: el.className || '', text: (el.innerText || el.value || '').trim().slice(0, 40),
          indicated, visible};
}"""


def _topic_url(page, origin) -> str:
    page.goto(f"{origin}/e/{EDITION}/")
    href = page.get_by_role("navigation", name="Topics").get_by_role("link").first.get_attribute("href")
    assert href and href.startswith(f"/e/{EDITION}/topics/"), href
    return href


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
@pytest.mark.parametrize("kind", list(PAGES))
def test_every_page_kind_passes_the_accessibility_audit(origin, browser, shots, kind, viewport):
    context = browser.new_context(viewport=VIEWPORTS[viewport])
    page = context.new_page()
    problems_in_console: list[str] = []
    page.on("pageerror", lambda exc: problems_in_console.append(str(exc)))
    try:
        path = PAGES[kind] or _topic_url(page, origin)
        response = page.goto(origin + path)
        assert response.status == (404 if kind == "not-found" else 200), (kind, response.status)
        page.wait_for_load_state("load")
        shots(page, f"a11y-{kind}-{viewport}")
        assert page.evaluate(AUDIT) == [], (kind, viewport)

        page.keyboard.press("Tab")
        first = page.evaluate(FOCUSED)
        assert first and "skip" in str(first["cls"]), first  # skip to the content comes first
        stops = [first]
        for _ in range(FOCUS_STOPS):
            page.keyboard.press("Tab")
            stop = page.evaluate(FOCUSED)
            if stop is None:
                break
            stops.append(stop)
        assert len(stops) > 1, "nothing after the skip link takes the keyboard focus"
        bad = [s for s in stops if not (s["indicated"] and s["visible"])]
        assert bad == [], bad
        assert problems_in_console == []
    finally:
        context.close()
