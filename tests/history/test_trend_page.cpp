// The trend page renders in headless Chromium, is not blank, and its
// DOM holds one SVG point per recorded figure. The screenshot stays in the build folder
// (test-artefacts/history_trend.png) for a person to look at. Hidden from the default run: its
// own ctest entry, reported skipped where chromium is absent.
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "catch.hpp"
#include "history/history_support.hpp"
#include "tools/cli_runner.hpp"

namespace {

std::string chromium() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (std::filesystem::exists(c)) return c;
  return "";
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size())) ++n;
  return n;
}

uint32_t be32(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) | (uint32_t(uint8_t(s[at + 2])) << 8) |
         uint32_t(uint8_t(s[at + 3]));
}

struct Image {
  uint32_t w = 0, h = 0, channels = 0;
  std::vector<uint8_t> px;  // rows of w * channels bytes
};

// An 8-bit RGB or RGBA PNG as Chromium writes its screenshots: chunks, zlib, row filters.
Image decode_png(const std::string& file) {
  Image im;
  REQUIRE(file.size() > 33);
  REQUIRE(file.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
  std::string idat;
  for (size_t at = 8; at + 8 <= file.size();) {
    const uint32_t len = be32(file, at);
    const std::string type = file.substr(at + 4, 4);
    REQUIRE(at + 12 + len <= file.size());
    if (type == "IHDR") {
      im.w = be32(file, at + 8);
      im.h = be32(file, at + 12);
      REQUIRE(uint8_t(file[at + 16]) == 8);  // bit depth
      const int colour = uint8_t(file[at + 17]);
      REQUIRE((colour == 2 || colour == 6));
      REQUIRE(uint8_t(file[at + 20]) == 0);  // not interlaced
      im.channels = colour == 6 ? 4 : 3;
    } else if (type == "IDAT") {
      idat += file.substr(at + 8, len);
    }
    at += 12 + len;
  }
  const size_t stride = size_t(im.w) * im.channels;
  std::vector<uint8_t> raw((stride + 1) * im.h);
  uLongf got = raw.size();
  REQUIRE(uncompress(raw.data(), &got, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) == Z_OK);
  REQUIRE(got == raw.size());
  im.px.assign(stride * im.h, 0);
  const size_t bpp = im.channels;
  for (uint32_t y = 0; y < im.h; ++y) {
    const uint8_t f = raw[y * (stride + 1)];
    const uint8_t* in = &raw[y * (stride + 1) + 1];
    uint8_t* out = &im.px[y * stride];
    const uint8_t* up = y ? &im.px[(y - 1) * stride] : nullptr;
    for (size_t x = 0; x < stride; ++x) {
      const int a = x >= bpp ? out[x - bpp] : 0, b = up ? up[x] : 0, c = up && x >= bpp ? up[x - bpp] : 0;
      int pred = 0;
      if (f == 1) pred = a;
      else if (f == 2) pred = b;
      else if (f == 3) pred = (a + b) / 2;
      else if (f == 4) {
        const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
        pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[x] = uint8_t(in[x] + pred);
    }
  }
  return im;
}

}  // namespace

TEST_CASE("the trend page renders in headless Chromium: not blank, one SVG point per figure", "[.][chromium]") {
  const std::string browser = chromium();
  if (browser.empty()) {
    std::printf("skipped: chromium absent (Debian: apt-get install chromium); the trend page was not rendered\n");
    return;
  }
  const std::string dir = ts::test::scratch_dir();
  const std::string db = dir + "/trend.db", page = dir + "/trend.html";
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(db + ext);
  ts::test::record_forty(db, 0.03, 0.10, 1);
  const auto r = ts::test::run_cli("history " + db + " --html " + page);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const std::string html = ts::test::read_file(page);
  REQUIRE(count(html, "<circle class=\"pt ") == 80);  // 2 series x 40 runs

  const std::string artefacts = std::string(TOUCHSTONE_BUILD_DIR) + "/test-artefacts";
  std::filesystem::create_directories(artefacts);
  const std::string png = artefacts + "/history_trend.png", dom = dir + "/dom.html";
  std::filesystem::remove(png);
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking "
      "--disable-component-update --disable-sync --user-data-dir=" + dir + "/chromium-profile";
  const std::string url = "file://" + std::filesystem::absolute(page).string();
  REQUIRE(std::system(("timeout 120 " + browser + flags + " --dump-dom " + url + " >" + dom + " 2>/dev/null").c_str()) == 0);
  const std::string rendered = ts::test::read_file(dom);
  CHECK(count(rendered, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"trend\"") == 2);
  CHECK(count(rendered, "<circle class=\"pt ") == 80);
  // Both bounds are labelled; speedup's (1) lies on its axis and is drawn, rel_l2's (0.05) is far
  // above figures of 0.02 and only named.
  CHECK(count(rendered, "<text class=\"boundlabel\"") == 2);
  CHECK(count(rendered, "<line class=\"bound\"") == 1);
  CHECK(count(rendered, "(above the plot)") == 1);
  REQUIRE(std::system(("timeout 120 " + browser + flags + " --screenshot=" + png + " --window-size=1200,900 " + url +
                       " >/dev/null 2>&1").c_str()) == 0);
  REQUIRE(std::filesystem::exists(png));
  const Image im = decode_png(ts::test::read_file(png));
  CHECK(im.w == 1200);
  CHECK(im.h == 900);
  // Not blank: a share of the pixels differs from the page's white, and the verdicts' green
  // (ACCEPT) is among them.
  size_t ink = 0, green = 0;
  for (size_t i = 0; i + 2 < im.px.size(); i += im.channels) {
    const int R = im.px[i], G = im.px[i + 1], B = im.px[i + 2];
    if (R < 235 || G < 235 || B < 235) ++ink;
    if (G > 100 && G > R + 40 && G > B + 40) ++green;
  }
  const double share = double(ink) / (double(im.w) * im.h);
  INFO("non-white share " << share << ", green pixels " << green << ", screenshot " << png);
  CHECK(share > 0.02);
  CHECK(green > 200);
}

namespace {

const std::string kIdentity = "sha256:5be1d0c4a7f2" + std::string(52, 'e');
const std::string commit_of(int k) { return std::to_string(10 + k) + "ab34cd56ef78" + std::string(26, '9'); }

// Twelve runs whose rel_l2 and time step up at run 10: each change's line lies under the
// right-hand end of the plot, where the label of rel_l2's far bound (0.05, above figures of
// 0.02) is drawn.
std::string late_step_page(const std::string& dir) {
  const std::string db = dir + "/late.db", page = dir + "/late.html";
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(db + ext);
  const ts::GateFile gate = ts::test::steps_gate();
  ts::test::Noise rng(5);
  {
    ts::history::Store st = ts::history::Store::open_for_append(db);
    const auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(1796000000));
    for (int k = 1; k <= 12; ++k) {
      ts::GateRun run = ts::test::synthetic_run(gate, "sol:tau=1.3", 0.02 * (k >= 10 ? 1.05 : 1), 10 * (k >= 10 ? 1.2 : 1),
                                                0.0, rng, 500 + static_cast<uint64_t>(k));
      run.context["fixture_identity"] = kIdentity;
      ts::history::Provenance p;
      p.command = "gate";
      p.commit = commit_of(k);
      p.commit_source = "flag";
      p.touchstone_version = TOUCHSTONE_VERSION;
      st.append(ts::history::make_run_record(run, p, t0 + std::chrono::seconds(k)));
    }
  }
  const auto r = ts::test::run_cli("history " + db + " --html " + page);
  INFO(r.err);
  REQUIRE(r.code == 0);
  return page;
}

// The page's text as a reader sees it: without tooltips (<title> elements, title attributes)
// and the plots' labels for screen readers (aria-label).
std::string visible_text(std::string html) {
  html = std::regex_replace(html, std::regex("<title>[^<]*</title>"), "");
  return std::regex_replace(html, std::regex(" (title|aria-label)=\"[^\"]*\""), "");
}

}  // namespace

TEST_CASE("the trend page names fixtures and commits as the text does, the whole identity in tooltips", "[history]") {
  const std::string html = ts::test::read_file(late_step_page(ts::test::scratch_dir()));
  const std::string shown = visible_text(html);
  CHECK(shown.find(kIdentity.substr(7)) == std::string::npos);  // never the 64 digits on the page itself
  CHECK(shown.find(commit_of(10)) == std::string::npos);         // nor a 40-character commit
  CHECK(shown.find("fixture <span class=\"id\">5be1d0c4a7f2</span>") != std::string::npos);
  CHECK(shown.find("(commit <span class=\"id\">20ab34cd56ef</span>)") != std::string::npos);
  CHECK(shown.find(">11ab34cd56ef</text>") != std::string::npos);  // an axis label
  // The whole identities stay at hand, as tooltips.
  CHECK(html.find("title=\"" + kIdentity + "\"") != std::string::npos);
  CHECK(html.find("title=\"" + commit_of(10) + "\"") != std::string::npos);
  CHECK(html.find("<title>" + commit_of(1) + "</title>") != std::string::npos);
}

TEST_CASE("the trend page in Chromium at 1400 and 800 px: no label over another, nothing past the window", "[.][chromium]") {
  const std::string browser = chromium();
  if (browser.empty()) {
    std::printf("skipped: chromium absent (Debian: apt-get install chromium); the trend page was not rendered\n");
    return;
  }
  const std::string dir = ts::test::scratch_dir();
  const std::string page = late_step_page(dir);
  // The browser measures what it laid out: every pair of a plot's labels (title, bound, changes)
  // that intersect, and whether the page is wider than the window.
  std::string html = ts::test::read_file(page);
  const std::string probe = R"(<script>
const out = [];
for (const svg of document.querySelectorAll('svg.trend')) {
  const boxes = [...svg.querySelectorAll('text.ptitle, text.boundlabel, text.changelabel')]
      .map(t => [t.getAttribute('class') + ' ' + t.textContent, t.getBoundingClientRect()]);
  for (let i = 0; i < boxes.length; ++i)
    for (let j = i + 1; j < boxes.length; ++j) {
      const a = boxes[i][1], b = boxes[j][1];
      if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom)
        out.push(boxes[i][0] + ' | ' + boxes[j][0]);
    }
}
const d = document.documentElement;
document.body.setAttribute('data-overlaps', out.length + ': ' + out.join('; '));
document.body.setAttribute('data-overflow', String(d.scrollWidth - d.clientWidth));
</script></body>)";
  html.replace(html.rfind("</body>"), 7, probe);
  const std::string probed = dir + "/late_probe.html";
  {
    std::ofstream f(probed);
    f << html;
  }
  const std::string artefacts = std::string(TOUCHSTONE_BUILD_DIR) + "/test-artefacts";
  std::filesystem::create_directories(artefacts);
  const std::string flags =
      " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking "
      "--disable-component-update --disable-sync --user-data-dir=" + dir + "/chromium-profile";
  for (const int width : {1400, 800}) {
    const std::string size = " --window-size=" + std::to_string(width) + ",1000 ", dom = dir + "/late_dom.html";
    REQUIRE(std::system(("timeout 120 " + browser + flags + size + " --dump-dom file://" + probed + " >" + dom +
                         " 2>/dev/null").c_str()) == 0);
    const std::string rendered = ts::test::read_file(dom);
    std::smatch m;
    REQUIRE(std::regex_search(rendered, m, std::regex("data-overlaps=\"([^\"]*)\"")));
    INFO(width << " px: overlapping labels " << m[1]);
    CHECK(m[1].str().rfind("0: ", 0) == 0);
    REQUIRE(std::regex_search(rendered, m, std::regex("data-overflow=\"(-?[0-9]+)\"")));
    CHECK(std::stoi(m[1]) <= 0);
    // For a person to look at: the page as a reader gets it, at this width.
    const std::string png = artefacts + "/history_trend_late_" + std::to_string(width) + ".png";
    std::filesystem::remove(png);
    REQUIRE(std::system(("timeout 120 " + browser + flags + size + " --screenshot=" + png + " file://" +
                         std::filesystem::absolute(page).string() + " >/dev/null 2>&1").c_str()) == 0);
    CHECK(std::filesystem::exists(png));
  }
}
