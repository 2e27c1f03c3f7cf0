"""A copy of a rendered page with a probe script run at its end, for the page tests that measure
what Chromium laid out (render_pages.py: labels clear of each other; page_widths.py: nothing wider
than the window)."""
import os


def probed_copy(page, work, probe, suffix):
    """Writes work/<page's name><suffix> with `probe` (a <script>...</script></body>) in place of
    the page's </body>; returns its path."""
    html = open(page, encoding="utf-8").read()
    at = html.rfind("</body>")
    assert at >= 0, f"{page}: no </body>"
    path = os.path.join(work, os.path.basename(page) + suffix)
    with open(path, "w", encoding="utf-8") as f:
        f.write(html[:at] + probe + html[at + len("</body>"):])
    return path
