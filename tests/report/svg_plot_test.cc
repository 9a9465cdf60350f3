// Tests for the SVG chart renderer (report/svg_plot.h).

#include "report/svg_plot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace powertrain::report {
namespace {

std::size_t count_of(std::string_view haystack, std::string_view needle) {
  std::size_t n = 0;
  for (std::size_t pos = haystack.find(needle); pos != std::string_view::npos;
       pos = haystack.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

// Text of every `<g class="NAME" ...> ... </g>` group (groups of these classes do not nest).
std::vector<std::string> groups(const std::string& svg, std::string_view name) {
  std::vector<std::string> out;
  const std::string open = "<g class=\"" + std::string(name) + "\"";
  for (std::size_t pos = svg.find(open); pos != std::string::npos; pos = svg.find(open, pos + 1)) {
    const std::size_t end = svg.find("</g>", pos);
    if (end == std::string::npos) break;
    out.push_back(svg.substr(pos, end - pos));
  }
  return out;
}

// Contents of all <text ...>...</text> elements in `fragment`.
std::vector<std::string> text_contents(std::string_view fragment) {
  std::vector<std::string> out;
  for (std::size_t pos = fragment.find("<text"); pos != std::string_view::npos;
       pos = fragment.find("<text", pos + 1)) {
    const std::size_t start = fragment.find('>', pos) + 1;
    const std::size_t end = fragment.find("</text>", start);
    out.emplace_back(fragment.substr(start, end - start));
  }
  return out;
}

// The (x,y) pairs of every <polyline points="..."> in `svg`.
std::vector<std::vector<std::pair<double, double>>> polylines(const std::string& svg) {
  std::vector<std::vector<std::pair<double, double>>> out;
  const std::string open = "<polyline";
  for (std::size_t pos = svg.find(open); pos != std::string::npos; pos = svg.find(open, pos + 1)) {
    const std::size_t attr = svg.find("points=\"", pos) + 8;
    const std::size_t end = svg.find('"', attr);
    const std::string points = svg.substr(attr, end - attr);
    std::vector<std::pair<double, double>> pts;
    std::size_t i = 0;
    while (i < points.size()) {
      std::size_t next = points.find(' ', i);
      if (next == std::string::npos) next = points.size();
      const std::string pair = points.substr(i, next - i);
      const std::size_t comma = pair.find(',');
      EXPECT_NE(comma, std::string::npos) << pair;
      pts.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
      i = next + 1;
    }
    out.push_back(std::move(pts));
  }
  return out;
}

void expect_well_formed(const std::string& svg) {
  ASSERT_FALSE(svg.empty());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u) << svg.substr(0, 80);
  ASSERT_GE(svg.size(), 7u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count_of(svg, "<svg"), 1u);
  EXPECT_EQ(count_of(svg, "</svg>"), 1u);
  EXPECT_EQ(count_of(svg, "<g ") + count_of(svg, "<g>"), count_of(svg, "</g>"));
  EXPECT_EQ(count_of(svg, "<text"), count_of(svg, "</text>"));
  EXPECT_EQ(count_of(svg, "nan"), 0u);
  EXPECT_EQ(count_of(svg, "inf"), 0u);
}

// Checks that `labels` are 4–8 evenly spaced 1/2/5 x 10^k tick values within [lo, hi] (padded
// data range, with a little slack) and are printed compactly.
void expect_nice_ticks(const std::vector<std::string>& labels, double lo, double hi) {
  SCOPED_TRACE(::testing::Message() << "range [" << lo << ", " << hi << "]");
  ASSERT_GE(labels.size(), 4u);
  ASSERT_LE(labels.size(), 8u);
  std::vector<double> values;
  for (const std::string& l : labels) {
    EXPECT_LE(l.size(), 10u) << l;
    // No round-off noise such as "3.4530000000000003": few significant digits.
    const std::string mantissa_digits = l.substr(0, l.find('e'));
    EXPECT_LE(std::count_if(mantissa_digits.begin(), mantissa_digits.end(),
                            [](char c) { return c >= '0' && c <= '9'; }),
              7)
        << l;
    std::size_t used = 0;
    values.push_back(std::stod(l, &used));
    EXPECT_EQ(used, l.size()) << l;
  }
  const double step = values[1] - values[0];
  ASSERT_GT(step, 0.0);
  const double decade = std::pow(10.0, std::floor(std::log10(step) + 1e-9));
  const double mantissa = step / decade;
  EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 ||
              std::abs(mantissa - 5) < 1e-6)
      << "step " << step;
  for (std::size_t i = 0; i < values.size(); ++i) {
    EXPECT_NEAR(values[i], values[0] + step * static_cast<double>(i), step * 1e-6);
    EXPECT_NEAR(std::remainder(values[i], step), 0.0, step * 1e-6) << values[i];
  }
  // Padding is ~4 % per side; allow one extra step for the rare range extension.
  const double slack = (hi - lo) * 0.05 + step;
  EXPECT_GE(values.front(), lo - slack);
  EXPECT_LE(values.back(), hi + slack);
  // Ticks must cover most of the data range, not bunch up in one part of it.
  EXPECT_LE(values.front(), lo + (hi - lo) * 0.5);
  EXPECT_GE(values.back(), lo + (hi - lo) * 0.5);
}

PlotSpec frontier_spec() {
  PlotSpec spec;
  spec.title = "Time–energy frontier";
  spec.x_label = "iteration time (s, planned)";
  spec.y_label = "energy per iteration (J)";
  PlotSeries frontier;
  frontier.label = "frontier";
  frontier.style = PlotSeries::Style::kLineAndMarkers;
  for (int i = 0; i <= 40; ++i) {
    const double t = 3.2 + 0.045 * i;
    frontier.points.emplace_back(t, 1800.0 + 900.0 / (t - 3.0));
  }
  spec.series.push_back(frontier);
  PlotSeries baseline;
  baseline.label = "max frequency";
  baseline.color = "#d62728";
  baseline.style = PlotSeries::Style::kMarkers;
  baseline.points = {{3.2, 6300.0}};
  spec.series.push_back(baseline);
  spec.annotations.push_back({3.2, 6300.0, "max frequency", "#d62728"});
  spec.annotations.push_back({4.1, 1800.0 + 900.0 / 1.1, "chosen plan"});
  return spec;
}

TEST(SvgPlot, ProducesWellFormedDocument) {
  const std::string svg = render_svg_plot(frontier_spec());
  expect_well_formed(svg);
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("width=\"800\" height=\"520\""), std::string::npos);
  EXPECT_NE(svg.find("iteration time (s, planned)"), std::string::npos);
  EXPECT_NE(svg.find("energy per iteration (J)"), std::string::npos);
  EXPECT_NE(svg.find("Time–energy frontier"), std::string::npos);
  EXPECT_EQ(groups(svg, "series").size(), 2u);
  ASSERT_EQ(groups(svg, "legend").size(), 1u);
  const std::vector<std::string> legend = text_contents(groups(svg, "legend")[0]);
  EXPECT_EQ(legend, (std::vector<std::string>{"frontier", "max frequency"}));
  ASSERT_EQ(groups(svg, "annotations").size(), 1u);
  EXPECT_EQ(text_contents(groups(svg, "annotations")[0]),
            (std::vector<std::string>{"max frequency", "chosen plan"}));
}

TEST(SvgPlot, EscapesAllText) {
  PlotSpec spec;
  spec.title = "a<b & c>d \"q\"";
  spec.x_label = "x<1>";
  spec.y_label = "y & z";
  spec.series.push_back({"s<1>", {{0, 0}, {1, 1}}});
  spec.annotations.push_back({0.5, 0.5, "&note"});
  const std::string svg = render_svg_plot(spec);
  expect_well_formed(svg);
  EXPECT_NE(svg.find("a&lt;b &amp; c&gt;d &quot;q&quot;"), std::string::npos);
  EXPECT_NE(svg.find("x&lt;1&gt;"), std::string::npos);
  EXPECT_NE(svg.find("y &amp; z"), std::string::npos);
  EXPECT_NE(svg.find("s&lt;1&gt;"), std::string::npos);
  EXPECT_NE(svg.find("&amp;note"), std::string::npos);
  EXPECT_EQ(svg.find("a<b"), std::string::npos);
  EXPECT_EQ(svg.find("<1>"), std::string::npos);
  EXPECT_EQ(svg.find("& "), std::string::npos);
  // Every '&' starts an entity.
  for (std::size_t pos = svg.find('&'); pos != std::string::npos; pos = svg.find('&', pos + 1)) {
    const std::string_view rest = std::string_view(svg).substr(pos);
    EXPECT_TRUE(rest.starts_with("&amp;") || rest.starts_with("&lt;") || rest.starts_with("&gt;") ||
                rest.starts_with("&quot;") || rest.starts_with("&apos;"))
        << rest.substr(0, 10);
  }
}

TEST(SvgPlot, ReplacesControlCharactersAndInvalidUtf8) {
  PlotSpec spec;
  spec.title = std::string("bad\x01\x02 bytes \xff\xfe end");
  spec.series.push_back({"ok", {{0, 1}, {2, 3}}});
  const std::string svg = render_svg_plot(spec);
  expect_well_formed(svg);
  EXPECT_EQ(svg.find('\x01'), std::string::npos);
  EXPECT_EQ(svg.find('\xff'), std::string::npos);
  EXPECT_NE(svg.find("bad?? bytes \xEF\xBF\xBD\xEF\xBF\xBD end"), std::string::npos);
}

TEST(SvgPlot, TickLabelsAreNiceNumbersWithinDataRange) {
  const std::vector<std::pair<double, double>> ranges = {
      {0.0, 1.0},      {3.2, 5.0},      {1800.0, 6300.0},   {0.5, 18.5},  {-0.1, 16.1},
      {-3.7, 2.2},     {1e-6, 3e-6},    {0.1, 0.3},         {2e6, 9.5e6}, {1e9, 1.00001e9},
      {-250.0, -10.0}, {0.001, 0.0013}, {12345.0, 12399.0}, {0.0, 7.0},   {99.0, 101.0}};
  auto check = [](double lo, double hi) {
    PlotSpec spec;
    spec.series.push_back({"", {{lo, hi}, {hi, lo}}});
    const std::string svg = render_svg_plot(spec);
    expect_well_formed(svg);
    const auto x = groups(svg, "x-ticks");
    const auto y = groups(svg, "y-ticks");
    ASSERT_EQ(x.size(), 1u);
    ASSERT_EQ(y.size(), 1u);
    expect_nice_ticks(text_contents(x[0]), lo, hi);
    expect_nice_ticks(text_contents(y[0]), lo, hi);
  };
  for (const auto& [lo, hi] : ranges) check(lo, hi);
  std::mt19937_64 rng(12345);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int i = 0; i < 300; ++i) {
    const double scale = std::pow(10.0, std::floor(unit(rng) * 12.0) - 6.0);
    const double lo = (unit(rng) * 20.0 - 10.0) * scale;
    const double hi = lo + (0.01 + unit(rng) * 20.0) * scale;
    check(lo, hi);
  }
}

TEST(SvgPlot, TickLabelsAreCompact) {
  PlotSpec spec;
  spec.series.push_back({"", {{0.1, 3.453}, {0.7, 3.4530000000000003}, {0.3, 3.47}}});
  const std::string svg = render_svg_plot(spec);
  expect_well_formed(svg);
  for (const char* group : {"x-ticks", "y-ticks"}) {
    for (const std::string& label : text_contents(groups(svg, group).at(0))) {
      EXPECT_LE(label.size(), 6u) << label;
    }
  }
  const std::vector<std::string> x = text_contents(groups(svg, "x-ticks").at(0));
  EXPECT_NE(std::find(x.begin(), x.end(), "0.3"), x.end());
  EXPECT_NE(std::find(x.begin(), x.end(), "0.6"), x.end());
}

TEST(SvgPlot, ConstantAndEmptyDataDoNotProduceNanOrInf) {
  PlotSpec constant;
  constant.series.push_back({"flat", {{5.0, 42.0}, {5.0, 42.0}, {5.0, 42.0}}});
  constant.series.back().style = PlotSeries::Style::kLineAndMarkers;
  const std::string svg = render_svg_plot(constant);
  expect_well_formed(svg);
  const auto y = text_contents(groups(svg, "y-ticks").at(0));
  expect_nice_ticks(y, 40.0, 44.0);
  expect_nice_ticks(text_contents(groups(svg, "x-ticks").at(0)), 4.7, 5.3);

  PlotSpec zero;
  zero.series.push_back({"zero", {{0.0, 0.0}}});
  expect_well_formed(render_svg_plot(zero));

  PlotSpec empty;
  const std::string empty_svg = render_svg_plot(empty);
  expect_well_formed(empty_svg);
  EXPECT_EQ(groups(empty_svg, "legend").size(), 0u);
  EXPECT_EQ(count_of(empty_svg, "<polyline"), 0u);

  PlotSpec no_points;
  no_points.series.push_back({"nothing", {}});
  const std::string no_points_svg = render_svg_plot(no_points);
  expect_well_formed(no_points_svg);
  EXPECT_EQ(count_of(no_points_svg, "<polyline"), 0u);

  PlotSpec tiny;
  tiny.width_px = 1;
  tiny.height_px = -5;
  tiny.series.push_back({"s", {{1, 2}, {3, 4}}});
  const std::string tiny_svg = render_svg_plot(tiny);
  expect_well_formed(tiny_svg);
  EXPECT_EQ(tiny_svg.find("width=\"-"), std::string::npos);
  EXPECT_EQ(tiny_svg.find("height=\"-"), std::string::npos);
}

TEST(SvgPlot, SkipsNonFinitePoints) {
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  PlotSpec spec;
  spec.series.push_back({"s", {{0, 1}, {kNan, 2}, {1, kInf}, {2, 3}, {-kInf, kNan}, {3, 2}}});
  spec.annotations.push_back({kNan, 1.0, "bad"});
  const std::string svg = render_svg_plot(spec);
  expect_well_formed(svg);
  const auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].size(), 3u);
  EXPECT_EQ(svg.find(">bad<"), std::string::npos);
  // The skipped points did not stretch the axes: x ticks stay within the finite data.
  expect_nice_ticks(text_contents(groups(svg, "x-ticks").at(0)), 0.0, 3.0);

  PlotSpec all_bad;
  all_bad.series.push_back({"s", {{kNan, kNan}, {kInf, 1.0}}});
  const std::string all_bad_svg = render_svg_plot(all_bad);
  expect_well_formed(all_bad_svg);
  EXPECT_EQ(count_of(all_bad_svg, "<polyline"), 0u);
}

TEST(SvgPlot, LineSeriesPolylineHasOnePointPerInputPointInsidePlot) {
  PlotSpec spec;
  PlotSeries s;
  s.label = "big";
  for (int i = 0; i < 5000; ++i) s.points.emplace_back(i * 0.01, std::sin(i * 0.01));
  spec.series.push_back(s);
  PlotSeries small;
  small.label = "small";
  small.points = {{1, 0.5}, {2, -0.5}, {3, 0.25}};
  spec.series.push_back(small);
  const std::string svg = render_svg_plot(spec);
  expect_well_formed(svg);
  const auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].size(), 5000u);
  EXPECT_EQ(lines[1].size(), 3u);
  // All points lie in the canvas; x increases monotonically like the input.
  for (const auto& line : lines) {
    for (const auto& [x, y] : line) {
      EXPECT_GE(x, 0.0);
      EXPECT_LE(x, 800.0);
      EXPECT_GE(y, 0.0);
      EXPECT_LE(y, 520.0);
    }
  }
  for (std::size_t i = 1; i < lines[0].size(); ++i) {
    EXPECT_GE(lines[0][i].first, lines[0][i - 1].first);
  }
  // Larger data y is drawn higher (smaller SVG y).
  EXPECT_LT(lines[1][0].second, lines[1][1].second);
  // Line-only series draw no markers.
  for (const std::string& g : groups(svg, "series")) EXPECT_EQ(count_of(g, "<circle"), 0u);
}

TEST(SvgPlot, MarkersAreDownsampledToCap) {
  PlotSpec spec;
  PlotSeries dense;
  dense.style = PlotSeries::Style::kMarkers;
  for (int i = 0; i < 10001; ++i) dense.points.emplace_back(i, i % 97);
  spec.series.push_back(dense);
  PlotSeries sparse;
  sparse.style = PlotSeries::Style::kLineAndMarkers;
  for (int i = 0; i < 1500; ++i) sparse.points.emplace_back(i, i);
  spec.series.push_back(sparse);
  const std::string svg = render_svg_plot(spec);
  expect_well_formed(svg);
  const auto series = groups(svg, "series");
  ASSERT_EQ(series.size(), 2u);
  const std::size_t dense_markers = count_of(series[0], "<circle");
  EXPECT_LE(dense_markers, kMaxMarkersPerSeries);
  EXPECT_GE(dense_markers, kMaxMarkersPerSeries / 2);
  EXPECT_EQ(count_of(series[0], "<polyline"), 0u);
  EXPECT_EQ(count_of(series[1], "<circle"), 1500u);
  EXPECT_EQ(count_of(series[1], "<polyline"), 1u);
  EXPECT_LT(svg.size(), 1'000'000u);
}

TEST(SvgPlot, LegendListsOnlyLabelledSeriesAndAvoidsData) {
  PlotSpec spec;
  PlotSeries frontier;
  frontier.label = "frontier";
  // Decreasing curve from top-left to bottom-right: top-right corner is free.
  for (int i = 0; i <= 100; ++i) frontier.points.emplace_back(i, 100.0 * std::exp(-i / 15.0));
  spec.series.push_back(frontier);
  spec.series.push_back({"", {{0, 0}, {100, 0}}});
  const std::string svg = render_svg_plot(spec);
  expect_well_formed(svg);
  const auto legend = groups(svg, "legend");
  ASSERT_EQ(legend.size(), 1u);
  EXPECT_EQ(text_contents(legend[0]), (std::vector<std::string>{"frontier"}));
  // Legend box is in the right half and upper half of the canvas.
  const std::size_t x_pos = legend[0].find("<rect x=\"") + 9;
  const double box_x = std::stod(legend[0].substr(x_pos));
  const std::size_t y_pos = legend[0].find("y=\"", x_pos) + 3;
  const double box_y = std::stod(legend[0].substr(y_pos));
  EXPECT_GT(box_x, 400.0);
  EXPECT_LT(box_y, 260.0);
}

}  // namespace
}  // namespace powertrain::report
