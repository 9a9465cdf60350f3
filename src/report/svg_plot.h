// Dependency-free SVG chart renderer used to draw time–energy frontiers (and any other 2-D
// scatter/line data) as a self-contained SVG document: nice-number axes with gridlines, a legend,
// point annotations and XML-escaped text.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace powertrain::report {

/// Upper bound on the number of marker glyphs drawn for one series. Denser series are thinned by a
/// fixed stride (every k-th finite point) so that the SVG stays small; lines are never thinned.
inline constexpr std::size_t kMaxMarkersPerSeries = 2000;

/// One data series of a plot.
struct PlotSeries {
  /// Legend text. Series with an empty label are drawn but left out of the legend.
  std::string label;
  /// (x, y) points in data units, drawn in the given order. Points with a NaN/inf coordinate (or a
  /// magnitude above 1e300) are skipped.
  std::vector<std::pair<double, double>> points;
  /// Any SVG colour (e.g. "#1f77b4", "red", "rgb(0,0,0)").
  std::string color = "#1f77b4";
  /// How the series is drawn: one polyline through all points, markers (thinned to at most
  /// kMaxMarkersPerSeries), or both. A line series with a single point also gets a marker.
  enum class Style { kLine, kMarkers, kLineAndMarkers } style = Style::kLine;
  /// Marker radius in pixels (values <= 0 fall back to 3).
  double marker_radius_px = 3.0;
};

/// A marker plus a text label at a data point (e.g. "min energy", "chosen plan"). Annotation
/// points are included in the axis ranges; non-finite annotations are skipped.
struct PlotAnnotation {
  double x;
  double y;
  std::string text;
  std::string color = "#333333";
};

/// Everything needed to render one chart.
struct PlotSpec {
  /// Chart title, drawn centred at the top (omitted when empty).
  std::string title;
  /// X axis label, e.g. "iteration time (s, planned)".
  std::string x_label;
  /// Y axis label, e.g. "energy per iteration (J)".
  std::string y_label;
  std::vector<PlotSeries> series;
  std::vector<PlotAnnotation> annotations;
  /// Canvas size in pixels; very small sizes are raised to a usable minimum (240 x 180).
  int width_px = 800;
  int height_px = 520;
};

/// Renders `spec` as a self-contained SVG document (starts with "<svg", ends with "</svg>\n").
///
/// Axes use "nice" tick values (steps of 1, 2 or 5 x 10^k, 4–8 ticks per axis) with gridlines and
/// compactly formatted tick labels (e.g. "0.3", "1.5e6", never "0.30000000000000004"). The data
/// range is padded by about 4 % on each side; an empty plot or an axis whose values are all equal
/// gets a widened range instead of dividing by zero. NaN/inf points are skipped. Each line series
/// becomes one <polyline>; markers are capped at kMaxMarkersPerSeries per series by stride. The
/// legend is placed in the plot-area corner that covers the fewest data points. All text is
/// XML-escaped (control characters and invalid UTF-8 are replaced).
std::string render_svg_plot(const PlotSpec& spec);

}  // namespace powertrain::report
