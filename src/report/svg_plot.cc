// Implementation of the dependency-free SVG chart renderer (see svg_plot.h).

#include "report/svg_plot.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace powertrain::report {
namespace {

constexpr double kPadFraction = 0.04;  // Fraction of the data span added on each side.
constexpr long long kMinTicks = 4;
constexpr long long kMaxTicks = 8;
constexpr long long kTargetTicks = 6;
constexpr double kMaxMagnitude = 1e300;  // Larger coordinates are treated as non-finite.

constexpr double kTickFontPx = 12.0;
constexpr double kAxisLabelFontPx = 13.0;
constexpr double kTitleFontPx = 16.0;
constexpr double kLegendFontPx = 12.0;
constexpr double kAnnotationFontPx = 11.0;
constexpr double kCharWidthEm = 0.6;  // Rough average glyph advance of a sans-serif font.
constexpr double kTickLengthPx = 5.0;

bool usable(double v) { return std::isfinite(v) && std::abs(v) <= kMaxMagnitude; }
bool usable(double x, double y) { return usable(x) && usable(y); }

double text_width_px(std::string_view text, double font_px) {
  // Count code points, not bytes, so that "–" or "µ" count as one glyph.
  std::size_t glyphs = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++glyphs;
  }
  return static_cast<double>(glyphs) * font_px * kCharWidthEm;
}

// Appends `text` XML-escaped (valid in both element content and quoted attribute values).
// Characters that XML 1.0 forbids (C0 controls other than tab/newline/CR) and malformed UTF-8
// sequences are replaced so that the document always parses.
void append_escaped(std::string& out, std::string_view text) {
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '&':
          out += "&amp;";
          break;
        case '<':
          out += "&lt;";
          break;
        case '>':
          out += "&gt;";
          break;
        case '"':
          out += "&quot;";
          break;
        case '\'':
          out += "&apos;";
          break;
        case '\t':
        case '\n':
        case '\r':
          out += ' ';
          break;
        default:
          out += (c < 0x20 || c == 0x7F) ? '?' : static_cast<char>(c);
      }
      ++i;
      continue;
    }
    // Multi-byte UTF-8: validate length, continuation bytes, overlongs and surrogates.
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len != 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr std::array<std::uint32_t, 5> kMinForLen = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMinForLen[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF) &&
         cp != 0xFFFE && cp != 0xFFFF;
    if (ok) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    }
  }
}

std::string escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  append_escaped(out, text);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Axes

struct Axis {
  double lo = 0.0;
  double hi = 1.0;
  std::vector<double> ticks;
  std::vector<std::string> labels;
};

double pow10i(int e) { return std::pow(10.0, e); }

// Returns scaled * 10^exp as the double nearest to that decimal value (one rounding only), so that
// shortest/fixed formatting of tick values prints clean digits.
double decimal_value(double scaled, int exp) {
  return exp >= 0 ? scaled * pow10i(exp) : scaled / pow10i(-exp);
}

struct TickStep {
  int mantissa = 1;  // 1, 2 or 5
  int exp = 0;       // step = mantissa * 10^exp
  long long first = 0;
  long long last = -1;
  long long count() const { return last - first + 1; }
  double step() const { return decimal_value(mantissa, exp); }
};

TickStep make_step(int mantissa, int exp, double lo, double hi) {
  TickStep s;
  s.mantissa = mantissa;
  s.exp = exp;
  const double step = s.step();
  s.first = static_cast<long long>(std::ceil(lo / step));
  s.last = static_cast<long long>(std::floor(hi / step));
  return s;
}

// Compact, exact-looking labels: fixed notation with as many decimals as the step needs, or
// scientific ("2.5e-5", "1.5e6") for very large or very small magnitudes.
std::vector<std::string> format_ticks(const std::vector<double>& ticks, int step_exp) {
  double max_abs = 0.0;
  for (double t : ticks) max_abs = std::max(max_abs, std::abs(t));
  const bool scientific = max_abs >= 1e6 || (max_abs > 0.0 && max_abs < 1e-3);
  std::vector<std::string> labels;
  labels.reserve(ticks.size());
  for (double t : ticks) {
    if (t == 0.0) {
      labels.emplace_back(scientific ? std::string("0")
                                     : fmt::format("{:.{}f}", 0.0, std::max(0, -step_exp)));
      continue;
    }
    if (!scientific) {
      labels.push_back(fmt::format("{:.{}f}", t, std::max(0, -step_exp)));
      continue;
    }
    const int e = static_cast<int>(std::floor(std::log10(std::abs(t))));
    const std::string s = fmt::format("{:.{}e}", t, std::clamp(e - step_exp, 0, 16));
    const std::size_t epos = s.find('e');
    if (epos == std::string::npos) {
      labels.push_back(s);
      continue;
    }
    const int exponent = std::stoi(s.substr(epos + 1));
    labels.push_back(fmt::format("{}e{}", s.substr(0, epos), exponent));
  }
  return labels;
}

// Builds an axis for data in [dmin, dmax] (or no data when dmin > dmax): widens degenerate ranges,
// pads by kPadFraction and picks a 1/2/5 x 10^k step giving kMinTicks..kMaxTicks ticks.
Axis make_axis(double dmin, double dmax) {
  Axis axis;
  double lo = dmin;
  double hi = dmax;
  if (!(lo <= hi)) {
    lo = 0.0;
    hi = 1.0;
  } else {
    const double magnitude = std::max(std::abs(lo), std::abs(hi));
    if (hi - lo <= 1e-9 * magnitude || hi - lo < std::numeric_limits<double>::min()) {
      const double mid = lo + (hi - lo) / 2.0;
      const double half = std::abs(mid) > 0.0 ? std::abs(mid) * 0.05 : 0.5;
      lo = mid - half;
      hi = mid + half;
    }
    const double pad = (hi - lo) * kPadFraction;
    lo -= pad;
    hi += pad;
  }
  const double span = hi - lo;
  const int k0 = static_cast<int>(std::floor(std::log10(span)));

  std::optional<TickStep> best;
  std::optional<TickStep> fallback;  // Finest step that yields fewer than kMinTicks ticks.
  for (int k = k0 - 2; k <= k0 + 1; ++k) {
    for (int m : {1, 2, 5}) {
      const TickStep s = make_step(m, k, lo, hi);
      const long long count = s.count();
      if (count >= kMinTicks && count <= kMaxTicks) {
        // Prefer the count closest to the target; on ties prefer fewer ticks (larger step).
        if (!best || std::abs(count - kTargetTicks) <= std::abs(best->count() - kTargetTicks)) {
          best = s;
        }
      } else if (count < kMinTicks && (!fallback || count > fallback->count())) {
        fallback = s;
      }
    }
  }
  TickStep chosen;
  if (best) {
    chosen = *best;
  } else {
    // Rare alignment (e.g. step 2 gives 9 ticks, step 5 gives 3): take the larger step and extend
    // the range outwards to the nearest tick until there are enough ticks.
    chosen = fallback.value_or(make_step(1, k0, lo, hi));
    const double step = chosen.step();
    while (chosen.count() < kMinTicks) {
      const double next_lo = static_cast<double>(chosen.first - 1) * step;
      const double next_hi = static_cast<double>(chosen.last + 1) * step;
      if (lo - next_lo < next_hi - hi) {
        lo = next_lo;
        --chosen.first;
      } else {
        hi = next_hi;
        ++chosen.last;
      }
    }
  }
  axis.lo = lo;
  axis.hi = hi;
  for (long long i = chosen.first; i <= chosen.last; ++i) {
    const double t = decimal_value(static_cast<double>(i) * chosen.mantissa, chosen.exp);
    axis.ticks.push_back(t == 0.0 ? 0.0 : t);  // Normalises -0.0.
  }
  axis.labels = format_ticks(axis.ticks, chosen.exp);
  return axis;
}

// ---------------------------------------------------------------------------------------------
// Drawing helpers

struct Rect {
  double x = 0.0;
  double y = 0.0;
  double w = 0.0;
  double h = 0.0;
  bool contains(double px, double py) const {
    return px >= x && px <= x + w && py >= y && py <= y + h;
  }
};

// Maps data coordinates into the plot rectangle (y grows upwards in data space).
struct Mapper {
  Axis x_axis;
  Axis y_axis;
  Rect area;
  double px(double x) const { return area.x + (x - x_axis.lo) / (x_axis.hi - x_axis.lo) * area.w; }
  double py(double y) const {
    return area.y + area.h - (y - y_axis.lo) / (y_axis.hi - y_axis.lo) * area.h;
  }
};

// Pixel coordinates are emitted with two decimals; this keeps files small and never prints
// "nan"/"inf" because every coordinate comes from a finite, range-checked value.
std::string num(double v) {
  if (!std::isfinite(v)) v = 0.0;
  std::string s = fmt::format("{:.2f}", v);
  // Trim trailing zeros ("12.50" -> "12.5", "12.00" -> "12").
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

struct LegendLayout {
  Rect box;
  std::vector<std::size_t> entries;  // Indices into spec.series.
};

constexpr double kLegendPad = 8.0;
constexpr double kLegendRow = 18.0;
constexpr double kLegendSample = 26.0;
constexpr double kLegendInset = 10.0;

LegendLayout layout_legend(const PlotSpec& spec, const Mapper& map) {
  LegendLayout legend;
  double max_text = 0.0;
  for (std::size_t i = 0; i < spec.series.size(); ++i) {
    if (spec.series[i].label.empty()) continue;
    legend.entries.push_back(i);
    max_text = std::max(max_text, text_width_px(spec.series[i].label, kLegendFontPx));
  }
  if (legend.entries.empty()) return legend;
  const double w = kLegendPad * 2 + kLegendSample + 6.0 + max_text;
  const double h = kLegendPad * 2 + kLegendRow * static_cast<double>(legend.entries.size()) - 4.0;
  const Rect& a = map.area;
  const std::array<Rect, 4> corners = {
      Rect{a.x + a.w - kLegendInset - w, a.y + kLegendInset, w, h},            // top-right
      Rect{a.x + kLegendInset, a.y + kLegendInset, w, h},                      // top-left
      Rect{a.x + a.w - kLegendInset - w, a.y + a.h - kLegendInset - h, w, h},  // bottom-right
      Rect{a.x + kLegendInset, a.y + a.h - kLegendInset - h, w, h},            // bottom-left
  };
  // Pick the corner covering the fewest data points (earlier corners win ties). Points are
  // sampled so that huge series stay cheap.
  std::array<std::size_t, 4> covered = {0, 0, 0, 0};
  for (const PlotSeries& s : spec.series) {
    const std::size_t stride = std::max<std::size_t>(1, s.points.size() / 4000);
    for (std::size_t i = 0; i < s.points.size(); i += stride) {
      const auto [x, y] = s.points[i];
      if (!usable(x, y)) continue;
      const double px = map.px(x);
      const double py = map.py(y);
      for (std::size_t c = 0; c < corners.size(); ++c) {
        if (corners[c].contains(px, py)) ++covered[c];
      }
    }
  }
  for (const PlotAnnotation& an : spec.annotations) {
    if (!usable(an.x, an.y)) continue;
    for (std::size_t c = 0; c < corners.size(); ++c) {
      // Annotation labels extend to the right of the point; weight them heavily.
      if (corners[c].contains(map.px(an.x), map.py(an.y))) covered[c] += 50;
    }
  }
  const auto best = std::min_element(covered.begin(), covered.end()) - covered.begin();
  legend.box = corners[static_cast<std::size_t>(best)];
  return legend;
}

void append_marker(std::string& out, double px, double py, double r, const std::string& color) {
  fmt::format_to(std::back_inserter(out),
                 "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"{}\" stroke=\"#ffffff\" "
                 "stroke-width=\"0.75\"/>\n",
                 num(px), num(py), num(r), color);
}

// Appends formatted SVG text.
template <typename... Args>
void put(std::string& out, fmt::string_view format, Args&&... args) {
  fmt::vformat_to(std::back_inserter(out), format, fmt::make_format_args(args...));
}

// Axes over the data extents of all usable series points and annotations, and the plot area
// inside margins sized for the labels. `y_tick_w` receives the widest y tick label (px).
Mapper layout_plot(const PlotSpec& spec, double width, double height, double& y_tick_w) {
  double xmin = std::numeric_limits<double>::infinity();
  double xmax = -std::numeric_limits<double>::infinity();
  double ymin = xmin;
  double ymax = xmax;
  auto include = [&](double x, double y) {
    if (!usable(x, y)) return;
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
    ymin = std::min(ymin, y);
    ymax = std::max(ymax, y);
  };
  for (const PlotSeries& s : spec.series) {
    for (const auto& [x, y] : s.points) include(x, y);
  }
  for (const PlotAnnotation& a : spec.annotations) include(a.x, a.y);

  Mapper map;
  map.x_axis = make_axis(xmin, xmax);
  map.y_axis = make_axis(ymin, ymax);

  // Margins depend on the label sizes.
  y_tick_w = 0.0;
  for (const std::string& l : map.y_axis.labels) {
    y_tick_w = std::max(y_tick_w, text_width_px(l, kTickFontPx));
  }
  const double last_x_tick_w =
      map.x_axis.labels.empty() ? 0.0 : text_width_px(map.x_axis.labels.back(), kTickFontPx);
  const double top = spec.title.empty() ? 16.0 : 20.0 + kTitleFontPx + 8.0;
  const double bottom = kTickLengthPx + 6.0 + kTickFontPx + (spec.x_label.empty() ? 10.0 : 30.0);
  const double left = std::min(
      width * 0.45, kTickLengthPx + 6.0 + y_tick_w + 8.0 + (spec.y_label.empty() ? 0.0 : 22.0));
  const double right = std::max(18.0, last_x_tick_w / 2.0 + 6.0);
  map.area =
      Rect{left, top, std::max(10.0, width - left - right), std::max(10.0, height - top - bottom)};
  return map;
}

// Gridlines and the frame of the plot area.
void write_grid(std::string& out, const Mapper& map) {
  const Rect& area = map.area;
  auto w = [&out](fmt::string_view format, auto&&... args) { put(out, format, args...); };
  w("<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n");
  for (double t : map.x_axis.ticks) {
    const double px = map.px(t);
    w("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", num(px), num(area.y), num(px),
      num(area.y + area.h));
  }
  for (double t : map.y_axis.ticks) {
    const double py = map.py(t);
    w("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"/>\n", num(area.x), num(py),
      num(area.x + area.w), num(py));
  }
  w("</g>\n");
  w("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
    "stroke=\"#444444\" stroke-width=\"1\"/>\n",
    num(area.x), num(area.y), num(area.w), num(area.h));
}

void write_ticks(std::string& out, const Mapper& map) {
  const Rect& area = map.area;
  auto w = [&out](fmt::string_view format, auto&&... args) { put(out, format, args...); };
  const double bottom_y = area.y + area.h;
  w("<g class=\"x-ticks\" font-size=\"{}\" fill=\"#333333\" text-anchor=\"middle\">\n",
    num(kTickFontPx));
  for (std::size_t i = 0; i < map.x_axis.ticks.size(); ++i) {
    const double px = map.px(map.x_axis.ticks[i]);
    w("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#444444\"/>\n", num(px),
      num(bottom_y), num(px), num(bottom_y + kTickLengthPx));
    w("<text x=\"{}\" y=\"{}\">{}</text>\n", num(px),
      num(bottom_y + kTickLengthPx + 4.0 + kTickFontPx * 0.8), escaped(map.x_axis.labels[i]));
  }
  w("</g>\n");
  w("<g class=\"y-ticks\" font-size=\"{}\" fill=\"#333333\" text-anchor=\"end\">\n",
    num(kTickFontPx));
  for (std::size_t i = 0; i < map.y_axis.ticks.size(); ++i) {
    const double py = map.py(map.y_axis.ticks[i]);
    w("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#444444\"/>\n",
      num(area.x - kTickLengthPx), num(py), num(area.x), num(py));
    w("<text x=\"{}\" y=\"{}\">{}</text>\n", num(area.x - kTickLengthPx - 4.0),
      num(py + kTickFontPx * 0.35), escaped(map.y_axis.labels[i]));
  }
  w("</g>\n");
}

// Title and axis labels.
void write_labels(std::string& out, const PlotSpec& spec, const Mapper& map, double width,
                  double height, double y_tick_w) {
  const Rect& area = map.area;
  auto w = [&out](fmt::string_view format, auto&&... args) { put(out, format, args...); };
  if (!spec.title.empty()) {
    w("<text class=\"title\" x=\"{}\" y=\"{}\" font-size=\"{}\" font-weight=\"bold\" "
      "text-anchor=\"middle\" fill=\"#222222\">{}</text>\n",
      num(width / 2.0), num(20.0 + kTitleFontPx * 0.5), num(kTitleFontPx), escaped(spec.title));
  }
  if (!spec.x_label.empty()) {
    w("<text class=\"x-label\" x=\"{}\" y=\"{}\" font-size=\"{}\" text-anchor=\"middle\" "
      "fill=\"#222222\">{}</text>\n",
      num(area.x + area.w / 2.0), num(height - 10.0), num(kAxisLabelFontPx), escaped(spec.x_label));
  }
  if (!spec.y_label.empty()) {
    const double lx = std::max(kAxisLabelFontPx, area.x - kTickLengthPx - 6.0 - y_tick_w - 10.0);
    const double ly = area.y + area.h / 2.0;
    w("<text class=\"y-label\" x=\"{0}\" y=\"{1}\" transform=\"rotate(-90 {0} {1})\" "
      "font-size=\"{2}\" text-anchor=\"middle\" fill=\"#222222\">{3}</text>\n",
      num(lx), num(ly), num(kAxisLabelFontPx), escaped(spec.y_label));
  }
}

void write_series(std::string& out, const PlotSpec& spec, const Mapper& map) {
  auto w = [&out](fmt::string_view format, auto&&... args) { put(out, format, args...); };
  for (const PlotSeries& s : spec.series) {
    const std::string color = escaped(s.color.empty() ? std::string("#1f77b4") : s.color);
    const double radius =
        s.marker_radius_px > 0.0 && std::isfinite(s.marker_radius_px) ? s.marker_radius_px : 3.0;
    std::vector<std::pair<double, double>> pts;  // Pixel coordinates of usable points.
    pts.reserve(s.points.size());
    for (const auto& [x, y] : s.points) {
      if (usable(x, y)) pts.emplace_back(map.px(x), map.py(y));
    }
    w("<g class=\"series\">\n");
    const bool line = s.style != PlotSeries::Style::kMarkers;
    bool markers = s.style != PlotSeries::Style::kLine;
    if (line && !pts.empty()) {
      out += "<polyline fill=\"none\" stroke=\"";
      out += color;
      out += "\" stroke-width=\"2\" stroke-linejoin=\"round\" stroke-linecap=\"round\" points=\"";
      for (std::size_t i = 0; i < pts.size(); ++i) {
        if (i > 0) out += ' ';
        out += num(pts[i].first);
        out += ',';
        out += num(pts[i].second);
      }
      out += "\"/>\n";
      if (pts.size() == 1) markers = true;  // A one-point polyline would be invisible.
    }
    if (markers && !pts.empty()) {
      const std::size_t stride = (pts.size() + kMaxMarkersPerSeries - 1) / kMaxMarkersPerSeries;
      for (std::size_t i = 0; i < pts.size(); i += stride) {
        append_marker(out, pts[i].first, pts[i].second, radius, color);
      }
    }
    w("</g>\n");
  }
}

// Annotations: ring marker plus a label, flipped left/below near the plot edges.
void write_annotations(std::string& out, const PlotSpec& spec, const Mapper& map) {
  const Rect& area = map.area;
  auto w = [&out](fmt::string_view format, auto&&... args) { put(out, format, args...); };
  if (!spec.annotations.empty()) {
    w("<g class=\"annotations\" font-size=\"{}\">\n", num(kAnnotationFontPx));
    for (const PlotAnnotation& a : spec.annotations) {
      if (!usable(a.x, a.y)) continue;
      const std::string color = escaped(a.color.empty() ? std::string("#333333") : a.color);
      const double px = map.px(a.x);
      const double py = map.py(a.y);
      w("<circle cx=\"{}\" cy=\"{}\" r=\"5\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>\n",
        num(px), num(py), color);
      if (a.text.empty()) continue;
      const double tw = text_width_px(a.text, kAnnotationFontPx);
      const bool flip_left = px + 8.0 + tw > area.x + area.w;
      const bool below = py - 8.0 - kAnnotationFontPx < area.y;
      w("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" fill=\"{}\" stroke=\"#ffffff\" "
        "stroke-width=\"3\" paint-order=\"stroke\">{}</text>\n",
        num(flip_left ? px - 8.0 : px + 8.0), num(below ? py + 8.0 + kAnnotationFontPx : py - 8.0),
        flip_left ? "end" : "start", color, escaped(a.text));
    }
    w("</g>\n");
  }
}

void write_legend(std::string& out, const PlotSpec& spec, const Mapper& map) {
  auto w = [&out](fmt::string_view format, auto&&... args) { put(out, format, args...); };
  const LegendLayout legend = layout_legend(spec, map);
  if (!legend.entries.empty()) {
    const Rect& b = legend.box;
    w("<g class=\"legend\" font-size=\"{}\">\n", num(kLegendFontPx));
    w("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"3\" fill=\"#ffffff\" "
      "fill-opacity=\"0.9\" stroke=\"#999999\" stroke-width=\"1\"/>\n",
      num(b.x), num(b.y), num(b.w), num(b.h));
    for (std::size_t row = 0; row < legend.entries.size(); ++row) {
      const PlotSeries& s = spec.series[legend.entries[row]];
      const std::string color = escaped(s.color.empty() ? std::string("#1f77b4") : s.color);
      const double cy = b.y + kLegendPad + kLegendRow * static_cast<double>(row) + 5.0;
      const double x0 = b.x + kLegendPad;
      if (s.style != PlotSeries::Style::kMarkers) {
        w("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"2\"/>\n",
          num(x0), num(cy), num(x0 + kLegendSample), num(cy), color);
      }
      if (s.style != PlotSeries::Style::kLine) {
        const double r = s.marker_radius_px > 0.0 && std::isfinite(s.marker_radius_px)
                             ? std::min(s.marker_radius_px, 6.0)
                             : 3.0;
        append_marker(out, x0 + kLegendSample / 2.0, cy, r, color);
      }
      w("<text x=\"{}\" y=\"{}\" fill=\"#222222\">{}</text>\n", num(x0 + kLegendSample + 6.0),
        num(cy + kLegendFontPx * 0.35), escaped(s.label));
    }
    w("</g>\n");
  }
}

}  // namespace

std::string render_svg_plot(const PlotSpec& spec) {
  const double width = std::max(spec.width_px, 240);
  const double height = std::max(spec.height_px, 180);
  double y_tick_w = 0.0;
  const Mapper map = layout_plot(spec, width, height, y_tick_w);

  std::string out;
  out.reserve(4096 + 16 * [&] {
    std::size_t n = 0;
    for (const PlotSeries& s : spec.series) n += s.points.size();
    return n;
  }());
  put(out,
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n",
      num(width), num(height), num(width), num(height));
  if (!spec.title.empty()) put(out, "<title>{}</title>\n", escaped(spec.title));
  put(out, "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", num(width),
      num(height));
  write_grid(out, map);
  write_ticks(out, map);
  write_labels(out, spec, map, width, height, y_tick_w);
  write_series(out, spec, map);
  write_annotations(out, spec, map);
  write_legend(out, spec, map);
  out += "</svg>\n";
  return out;
}

}  // namespace powertrain::report
