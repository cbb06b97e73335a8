//! SVG plots for index.html, drawn with plotters' SVG backend into strings.
//!
//! Text goes through plotters-svg, which escapes it. Without a font feature plotters estimates
//! text widths (its "naive" font), so no font files are read and the SVG names only the generic
//! `sans-serif` family. Box plots are drawn from rectangles and lines rather than plotters'
//! `Boxplot` element, because that element puts the whiskers at the 1.5·IQR fences themselves
//! (not at the most extreme samples inside them) and draws no outliers, and seed 000's box plots
//! (Fig. 27–30) are read for exactly those outliers.

use plotters::coord::Shift;
use plotters::coord::combinators::{BindKeyPoints, LogCoord, WithKeyPoints};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::fit::LinearFit;
use super::summary::ReportError;
use crate::stats::quantile_sorted;

const WIDTH: u32 = 900;
const FONT: &str = "sans-serif";

/// Tableau's 10 colours plus four lighter ones: 14 profiles of the seed-000 matrix at a payload.
const PALETTE: [RGBColor; 14] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(174, 199, 232),
    RGBColor(255, 187, 120),
    RGBColor(152, 223, 138),
    RGBColor(255, 152, 150),
];

pub(crate) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// Minor grid lines: barely there, so dense ones do not crowd the data.
const LIGHT_GRID: RGBColor = RGBColor(242, 242, 242);

/// A logarithmic axis over `lo..hi` (both > 0) labelled at 1, 2 and 5 × 10^k, with faint grid
/// lines at every integer multiple of 10^k: plotters' own log key points leave long stretches
/// unlabelled.
fn log_axis(lo: f64, hi: f64) -> WithKeyPoints<LogCoord<f64>> {
    let mut bold = Vec::new();
    let mut light = Vec::new();
    let mut decade = 10f64.powi(lo.log10().floor() as i32);
    while decade <= hi && decade > 0.0 {
        for m in 1..10 {
            let v = decade * m as f64;
            if v >= lo && v <= hi {
                light.push(v);
                if matches!(m, 1 | 2 | 5) {
                    bold.push(v);
                }
            }
        }
        decade *= 10.0;
    }
    (lo..hi)
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

/// An axis label: whole numbers from 10 up, one decimal below.
fn number(v: f64) -> String {
    if v.abs() >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

const DEADLINE: RGBColor = RGBColor(200, 0, 0);
const MEAN: RGBColor = RGBColor(31, 119, 180);
const WORST: RGBColor = RGBColor(255, 160, 80);

fn perr<E: std::fmt::Display>(plot: &str) -> impl Fn(E) -> ReportError + '_ {
    move |e| ReportError::Plot {
        plot: plot.to_string(),
        message: e.to_string(),
    }
}

fn label_style(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font())
}

fn draw_text(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    text: &str,
    at: (i32, i32),
    size: u32,
    pos: Pos,
    title: &str,
) -> Result<(), ReportError> {
    root.draw(&Text::new(text.to_string(), at, label_style(size).pos(pos)))
        .map_err(perr(title))
}

/// Pixels of a label column wide enough for `labels` (plotters' own width estimate, capped).
fn label_width(labels: impl Iterator<Item = usize>) -> u32 {
    let chars = labels.max().unwrap_or(8) as u32;
    (chars * 6 + 16).clamp(60, 330)
}

/// Upper end of a latency axis: the largest value plus headroom, stretched to show the
/// deadline when it is within `reach` times the largest value. Returns the end and whether the
/// deadline is on the axis.
fn axis_end(max_value: f64, deadline: Option<f64>, reach: f64) -> (f64, bool) {
    let top = if max_value > 0.0 {
        max_value * 1.08
    } else {
        1.0
    };
    match deadline {
        Some(d) if d > 0.0 && d <= top * reach => (top.max(d * 1.05), true),
        _ => (top, false),
    }
}

/// A row of a horizontal mean/worst chart: a group heading or one scenario.
pub(crate) enum Row {
    Header(String),
    Bars {
        label: String,
        mean: f64,
        worst: f64,
    },
}

/// Horizontal mean and worst-case bars per scenario (seed 000 Fig. 17–19, 22–26), first row at
/// the top, with the deadline as a vertical line when it is within reach of the data.
pub(crate) fn mean_worst(
    title: &str,
    x_desc: &str,
    rows: &[Row],
    deadline: Option<f64>,
) -> Result<String, ReportError> {
    const ROW_PX: u32 = 15;
    let n = rows.len().max(1);
    let height = n as u32 * ROW_PX + 100;
    let worst_max = rows
        .iter()
        .filter_map(|r| match r {
            Row::Bars { worst, .. } => Some(*worst),
            Row::Header(_) => None,
        })
        .fold(0.0, f64::max);
    let (x_end, deadline_shown) = axis_end(worst_max, deadline, 3.0);
    let lw = label_width(rows.iter().map(|r| match r {
        Row::Header(s) => s.chars().count(),
        Row::Bars { label, .. } => label.chars().count(),
    }));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(perr(title))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 16))
            .margin(10)
            .margin_right(25)
            .x_label_area_size(40)
            .y_label_area_size(lw)
            .build_cartesian_2d(0f64..x_end, 0f64..n as f64)
            .map_err(perr(title))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(8)
            .x_label_formatter(&|v| number(*v))
            .x_desc(x_desc)
            .label_style((FONT, 11))
            .light_line_style(LIGHT_GRID)
            .draw()
            .map_err(perr(title))?;
        for (i, row) in rows.iter().enumerate() {
            let y0 = (n - 1 - i) as f64;
            let (px, py) = chart.backend_coord(&(0.0, y0 + 0.5));
            match row {
                Row::Header(h) => {
                    chart
                        .draw_series(std::iter::once(PathElement::new(
                            vec![(0.0, y0 + 1.0), (x_end, y0 + 1.0)],
                            BLACK.mix(0.4),
                        )))
                        .map_err(perr(title))?;
                    draw_text(
                        &root,
                        h,
                        (px - 6, py),
                        12,
                        Pos::new(HPos::Right, VPos::Center),
                        title,
                    )?;
                }
                Row::Bars { label, mean, worst } => {
                    chart
                        .draw_series([
                            Rectangle::new([(0.0, y0 + 0.5), (*mean, y0 + 0.92)], MEAN.filled()),
                            Rectangle::new([(0.0, y0 + 0.08), (*worst, y0 + 0.5)], WORST.filled()),
                        ])
                        .map_err(perr(title))?;
                    draw_text(
                        &root,
                        label,
                        (px - 6, py),
                        11,
                        Pos::new(HPos::Right, VPos::Center),
                        title,
                    )?;
                }
            }
        }
        if let (Some(d), true) = (deadline, deadline_shown) {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(d, 0.0), (d, n as f64)],
                    DEADLINE.stroke_width(2),
                )))
                .map_err(perr(title))?;
        }
        // Legend above the plot, right-aligned.
        let lx = WIDTH as i32 - 330;
        root.draw(&Rectangle::new([(lx, 28), (lx + 12, 38)], MEAN.filled()))
            .map_err(perr(title))?;
        draw_text(
            &root,
            "mean",
            (lx + 16, 33),
            11,
            Pos::new(HPos::Left, VPos::Center),
            title,
        )?;
        root.draw(&Rectangle::new(
            [(lx + 60, 28), (lx + 72, 38)],
            WORST.filled(),
        ))
        .map_err(perr(title))?;
        draw_text(
            &root,
            "worst (max)",
            (lx + 76, 33),
            11,
            Pos::new(HPos::Left, VPos::Center),
            title,
        )?;
        if let Some(d) = deadline {
            let text = if deadline_shown {
                format!("deadline {d:.0} µs")
            } else {
                format!("deadline {d:.0} µs: off this scale")
            };
            root.draw(&PathElement::new(
                vec![(lx + 150, 33), (lx + 165, 33)],
                DEADLINE.stroke_width(2),
            ))
            .map_err(perr(title))?;
            draw_text(
                &root,
                &text,
                (lx + 169, 33),
                11,
                Pos::new(HPos::Left, VPos::Center),
                title,
            )?;
        }
        root.present().map_err(perr(title))?;
    }
    Ok(svg)
}

/// One profile statistic against payload, with its fitted line.
pub(crate) struct FitSeries {
    pub label: String,
    pub color: usize,
    /// (payload bytes, µs)
    pub points: Vec<(f64, f64)>,
    pub fit: Option<LinearFit>,
}

/// Latency against payload with least-squares lines and where they reach the deadline
/// (seed 000 Fig. 20–21). The x axis extends to a crossing up to 4× the largest payload.
pub(crate) fn payload_fit(
    title: &str,
    series: &[FitSeries],
    deadline: f64,
) -> Result<String, ReportError> {
    let max_x = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0, f64::max)
        .max(1.0);
    let max_y = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let reach = max_x * 4.0;
    let crossings: Vec<Option<f64>> = series
        .iter()
        .map(|s| {
            s.fit
                .and_then(|f| f.crossing(deadline))
                .filter(|c| *c <= reach)
        })
        .collect();
    let far_crossing = crossings.iter().flatten().fold(0.0, |a: f64, c| a.max(*c));
    let x_end = (max_x * 1.1).max(far_crossing * 1.05);
    let show_deadline = far_crossing > 0.0 || max_y * 3.0 >= deadline;
    let y_end = if show_deadline {
        (max_y * 1.1).max(deadline * 1.1).max(1.0)
    } else {
        (max_y * 1.15).max(1.0)
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 440)).into_drawing_area();
        root.fill(&WHITE).map_err(perr(title))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 16))
            .margin(10)
            .margin_right(25)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..x_end, 0f64..y_end)
            .map_err(perr(title))?;
        chart
            .configure_mesh()
            .x_desc("payload (bytes)")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_desc("µs")
            .y_label_formatter(&|v| number(*v))
            .label_style((FONT, 11))
            .light_line_style(LIGHT_GRID)
            .draw()
            .map_err(perr(title))?;
        if show_deadline {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(0.0, deadline), (x_end, deadline)],
                    DEADLINE.stroke_width(2),
                )))
                .map_err(perr(title))?
                .label(format!("deadline {deadline:.0} µs"))
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 15, y)], DEADLINE.stroke_width(2))
                });
        }
        for (s, crossing) in series.iter().zip(&crossings) {
            let c = color(s.color);
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 4, c.filled())))
                .map_err(perr(title))?
                .label(s.label.clone())
                .legend(move |(x, y)| Circle::new((x + 7, y), 4, c.filled()));
            if let Some(f) = s.fit {
                // The line, clipped to the plotted y range.
                let mut x1 = x_end;
                if f.slope > 0.0 && f.at(x1) > y_end {
                    x1 = (y_end - f.intercept) / f.slope;
                }
                let x0 = if f.intercept < 0.0 && f.slope > 0.0 {
                    -f.intercept / f.slope
                } else {
                    0.0
                };
                chart
                    .draw_series(DashedLineSeries::new(
                        [(x0, f.at(x0)), (x1, f.at(x1))],
                        6,
                        4,
                        c.stroke_width(1),
                    ))
                    .map_err(perr(title))?;
                if let (Some(x), true) = (crossing, show_deadline) {
                    chart
                        .draw_series([Cross::new((*x, deadline), 6, c.stroke_width(2))])
                        .map_err(perr(title))?;
                    let (px, py) = chart.backend_coord(&(*x, deadline));
                    draw_text(
                        &root,
                        &format!("{x:.0} B"),
                        (px, py - 8),
                        11,
                        Pos::new(HPos::Center, VPos::Bottom),
                        title,
                    )?;
                }
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FONT, 11))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(perr(title))?;
        root.present().map_err(perr(title))?;
    }
    Ok(svg)
}

/// One box of a box plot: a label and the samples in µs, sorted ascending.
pub(crate) struct BoxRow {
    pub label: String,
    pub sorted: Vec<f64>,
}

/// At most this many outliers are drawn per side of a box (the most extreme always).
const MAX_OUTLIERS: usize = 40;

/// Evenly spaced picks from `v` that keep its first and last element.
fn spread_pick(v: &[f64], max: usize) -> Vec<f64> {
    if v.len() <= max || max < 2 {
        return v.to_vec();
    }
    (0..max).map(|i| v[i * (v.len() - 1) / (max - 1)]).collect()
}

/// Tukey box: quartiles (type 7), whiskers at the most extreme samples within 1.5·IQR of the
/// box, the samples beyond them as outliers.
pub(crate) struct Tukey {
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub lo_whisker: f64,
    pub hi_whisker: f64,
    pub low_outliers: usize,
    pub high_outliers: usize,
}

pub(crate) fn tukey(sorted: &[f64]) -> Option<Tukey> {
    if sorted.is_empty() {
        return None;
    }
    let q1 = quantile_sorted(sorted, 0.25);
    let q3 = quantile_sorted(sorted, 0.75);
    let iqr = q3 - q1;
    let (lf, hf) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
    let lo_i = sorted.partition_point(|&x| x < lf);
    let hi_i = sorted.partition_point(|&x| x <= hf);
    Some(Tukey {
        q1,
        median: quantile_sorted(sorted, 0.5),
        q3,
        lo_whisker: sorted[lo_i.min(sorted.len() - 1)],
        hi_whisker: sorted[hi_i.saturating_sub(1)],
        low_outliers: lo_i,
        high_outliers: sorted.len() - hi_i,
    })
}

/// Horizontal box plots, first row at the top (seed 000 Fig. 27–30). The latency axis is
/// logarithmic when the samples span more than a factor of 5 (outliers far from tight boxes),
/// linear otherwise.
pub(crate) fn box_plots(
    title: &str,
    x_desc: &str,
    rows: &[BoxRow],
) -> Result<(String, bool), ReportError> {
    const ROW_PX: u32 = 26;
    let n = rows.len().max(1);
    let height = n as u32 * ROW_PX + 100;
    let lo = rows
        .iter()
        .filter_map(|r| r.sorted.first())
        .fold(f64::INFINITY, |a, b| a.min(*b));
    let hi = rows
        .iter()
        .filter_map(|r| r.sorted.last())
        .fold(f64::NEG_INFINITY, |a, b| a.max(*b));
    let (lo, hi) = if lo.is_finite() && hi.is_finite() && hi > lo {
        (lo, hi)
    } else if lo.is_finite() {
        (lo - 1.0, lo + 1.0)
    } else {
        (0.0, 1.0)
    };
    let log = lo > 0.0 && hi / lo > 5.0;
    let lw = label_width(rows.iter().map(|r| r.label.chars().count()));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(perr(title))?;
        let frame = BoxFrame {
            root: &root,
            title,
            x_desc,
            rows,
            n,
            label_width: lw,
        };
        if log {
            frame.draw(log_axis(lo * 0.9, hi * 1.1), lo * 0.9)?;
        } else {
            let pad = (hi - lo) * 0.04;
            let left = (lo - pad).max(0.0);
            frame.draw(left..hi + pad, left)?;
        }
        root.present().map_err(perr(title))?;
    }
    Ok((svg, log))
}

struct BoxFrame<'a, 'b> {
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &'a str,
    x_desc: &'a str,
    rows: &'a [BoxRow],
    n: usize,
    label_width: u32,
}

impl BoxFrame<'_, '_> {
    fn draw<XR>(&self, x_range: XR, left: f64) -> Result<(), ReportError>
    where
        XR: AsRangedCoord<Value = f64>,
        XR::CoordDescType: ValueFormatter<f64>,
    {
        let (root, title, n) = (self.root, self.title, self.n);
        let mut chart = ChartBuilder::on(root)
            .caption(title, (FONT, 16))
            .margin(10)
            .margin_right(25)
            .x_label_area_size(40)
            .y_label_area_size(self.label_width)
            .build_cartesian_2d(x_range, 0f64..n as f64)
            .map_err(perr(title))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_labels(12)
            .x_label_formatter(&|v| number(*v))
            .x_desc(self.x_desc)
            .label_style((FONT, 11))
            .light_line_style(LIGHT_GRID)
            .draw()
            .map_err(perr(title))?;
        for (i, r) in self.rows.iter().enumerate() {
            let y0 = (n - 1 - i) as f64;
            let yc = y0 + 0.5;
            let (lx, py) = chart.backend_coord(&(left, yc));
            draw_text(
                root,
                &r.label,
                (lx - 6, py),
                11,
                Pos::new(HPos::Right, VPos::Center),
                title,
            )?;
            let Some(t) = tukey(&r.sorted) else { continue };
            let c = color(0);
            let whisker = BLACK.stroke_width(1);
            chart
                .draw_series([
                    PathElement::new(vec![(t.lo_whisker, yc), (t.q1, yc)], whisker),
                    PathElement::new(vec![(t.q3, yc), (t.hi_whisker, yc)], whisker),
                    PathElement::new(
                        vec![(t.lo_whisker, y0 + 0.3), (t.lo_whisker, y0 + 0.7)],
                        whisker,
                    ),
                    PathElement::new(
                        vec![(t.hi_whisker, y0 + 0.3), (t.hi_whisker, y0 + 0.7)],
                        whisker,
                    ),
                ])
                .map_err(perr(title))?;
            chart
                .draw_series([
                    Rectangle::new([(t.q1, y0 + 0.2), (t.q3, y0 + 0.8)], c.mix(0.35).filled()),
                    Rectangle::new([(t.q1, y0 + 0.2), (t.q3, y0 + 0.8)], c.stroke_width(1)),
                ])
                .map_err(perr(title))?;
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(t.median, y0 + 0.2), (t.median, y0 + 0.8)],
                    BLACK.stroke_width(2),
                )))
                .map_err(perr(title))?;
            let low = spread_pick(&r.sorted[..t.low_outliers], MAX_OUTLIERS);
            let high = spread_pick(&r.sorted[r.sorted.len() - t.high_outliers..], MAX_OUTLIERS);
            chart
                .draw_series(
                    low.iter()
                        .chain(high.iter())
                        .map(|&x| Circle::new((x, yc), 2, RED.mix(0.7).stroke_width(1))),
                )
                .map_err(perr(title))?;
        }
        Ok(())
    }
}

/// A named line or point set.
pub(crate) struct Series {
    pub label: String,
    pub color: usize,
    pub points: Vec<(f64, f64)>,
}

/// For each of at most `buckets` runs of consecutive samples, the smallest and the largest
/// (x = message number, 0-based): keeps every peak a scatter plot of all points would show.
pub(crate) fn decimate_min_max(values: &[f64], buckets: usize) -> Vec<(f64, f64)> {
    if values.len() <= 2 * buckets.max(1) {
        return values
            .iter()
            .enumerate()
            .map(|(i, &v)| (i as f64, v))
            .collect();
    }
    let size = values.len().div_ceil(buckets.max(1));
    let mut out = Vec::with_capacity(2 * buckets);
    for (b, chunk) in values.chunks(size).enumerate() {
        let base = b * size;
        let (mut imin, mut imax) = (0, 0);
        for (i, v) in chunk.iter().enumerate() {
            if *v < chunk[imin] {
                imin = i;
            }
            if *v > chunk[imax] {
                imax = i;
            }
        }
        let (a, z) = if imin <= imax {
            (imin, imax)
        } else {
            (imax, imin)
        };
        out.push(((base + a) as f64, chunk[a]));
        if z != a {
            out.push(((base + z) as f64, chunk[z]));
        }
    }
    out
}

/// Latency against message number (seed 000 Fig. 31–33), points.
pub(crate) fn dispersion(
    title: &str,
    y_desc: &str,
    series: &[Series],
) -> Result<String, ReportError> {
    let x_end = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(1.0, f64::max);
    let y_end = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(0.0, f64::max)
        .max(1e-3)
        * 1.08;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 380)).into_drawing_area();
        root.fill(&WHITE).map_err(perr(title))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 16))
            .margin(10)
            .margin_right(25)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0f64..x_end, 0f64..y_end)
            .map_err(perr(title))?;
        chart
            .configure_mesh()
            .x_desc("message number")
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_desc(y_desc)
            .y_label_formatter(&|v| number(*v))
            .label_style((FONT, 11))
            .light_line_style(LIGHT_GRID)
            .draw()
            .map_err(perr(title))?;
        for s in series {
            let c = color(s.color);
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 1, c.filled())))
                .map_err(perr(title))?
                .label(s.label.clone())
                .legend(move |(x, y)| Circle::new((x + 7, y), 4, c.filled()));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT, 11))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(perr(title))?;
        root.present().map_err(perr(title))?;
    }
    Ok(svg)
}

/// Empirical CDFs on a logarithmic latency axis.
pub(crate) fn cdf(title: &str, x_desc: &str, series: &[Series]) -> Result<String, ReportError> {
    let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let lo = xs().filter(|x| *x > 0.0).fold(f64::INFINITY, f64::min);
    let hi = xs().fold(0.0, f64::max);
    let (lo, hi) = if lo.is_finite() && hi > lo {
        (lo * 0.9, hi * 1.1)
    } else if lo.is_finite() {
        (lo * 0.5, lo * 2.0)
    } else {
        (1.0, 10.0)
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(perr(title))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 16))
            .margin(10)
            .margin_right(25)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(log_axis(lo, hi), 0f64..1.0)
            .map_err(perr(title))?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .x_labels(12)
            .x_label_formatter(&|v| number(*v))
            .y_desc("fraction of messages ≤ x")
            .label_style((FONT, 11))
            .light_line_style(LIGHT_GRID)
            .draw()
            .map_err(perr(title))?;
        for s in series {
            let c = color(s.color);
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied().filter(|p| p.0 > 0.0),
                    c.stroke_width(2),
                ))
                .map_err(perr(title))?
                .label(s.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 15, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .label_font((FONT, 11))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(perr(title))?;
        root.present().map_err(perr(title))?;
    }
    Ok(svg)
}

/// Points of an empirical CDF from sorted samples: 100 evenly spaced probabilities, a finer
/// tail (p99.1 … p99.9, p99.95, p99.99) and the maximum.
pub(crate) fn cdf_points(sorted: &[f64]) -> Vec<(f64, f64)> {
    if sorted.is_empty() {
        return Vec::new();
    }
    let mut ps: Vec<f64> = (0..100).map(|i| i as f64 / 100.0).collect();
    ps.extend((1..10).map(|i| 0.99 + i as f64 / 1000.0));
    ps.extend([0.9995, 0.9999, 1.0]);
    ps.into_iter()
        .map(|p| (quantile_sorted(sorted, p), p))
        .collect()
}

/// Exceedance P(latency > x) on logarithmic axes: the tail a deadline cares about.
pub(crate) fn exceedance(
    title: &str,
    x_desc: &str,
    series: &[Series],
) -> Result<String, ReportError> {
    // From CDF points (x, p): (x, 1 − p), dropping p = 1.
    let tails: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter(|p| p.0 > 0.0 && p.1 < 1.0)
                .map(|&(x, p)| (x, 1.0 - p))
                .collect()
        })
        .collect();
    let xs = || tails.iter().flatten().map(|p| p.0);
    let lo = xs().fold(f64::INFINITY, f64::min);
    let hi = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold(0.0, f64::max);
    let (lo, hi) = if lo.is_finite() && hi > lo {
        (lo * 0.9, hi * 1.1)
    } else {
        (1.0, 10.0)
    };
    let y_lo = tails
        .iter()
        .flatten()
        .map(|p| p.1)
        .fold(1.0, f64::min)
        .clamp(1e-6, 0.5)
        * 0.5;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(perr(title))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, (FONT, 16))
            .margin(10)
            .margin_right(25)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(log_axis(lo, hi), (y_lo..1.0).log_scale())
            .map_err(perr(title))?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .x_labels(12)
            .x_label_formatter(&|v| number(*v))
            .y_desc("fraction of messages > x")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .label_style((FONT, 11))
            .light_line_style(LIGHT_GRID)
            .draw()
            .map_err(perr(title))?;
        for (s, pts) in series.iter().zip(&tails) {
            let c = color(s.color);
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                .map_err(perr(title))?
                .label(s.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 15, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT, 11))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(perr(title))?;
        root.present().map_err(perr(title))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tukey_whiskers_stop_at_samples() {
        // 1..=9 and 100: q1 = 3.25, q3 = 7.75, IQR 4.5, fences −3.5 and 14.5.
        let v: Vec<f64> = (1..=9).map(f64::from).chain([100.0]).collect();
        let t = tukey(&v).unwrap();
        assert_eq!((t.q1, t.median, t.q3), (3.25, 5.5, 7.75));
        assert_eq!((t.lo_whisker, t.hi_whisker), (1.0, 9.0));
        assert_eq!((t.low_outliers, t.high_outliers), (0, 1));
        let one = tukey(&[5.0]).unwrap();
        assert_eq!((one.lo_whisker, one.hi_whisker), (5.0, 5.0));
        assert!(tukey(&[]).is_none());
    }

    #[test]
    fn decimation_keeps_extremes() {
        let mut v = vec![10.0; 10_000];
        v[1234] = 500.0;
        v[8000] = 1.0;
        let d = decimate_min_max(&v, 100);
        assert!(d.len() <= 200);
        assert!(d.contains(&(1234.0, 500.0)));
        assert!(d.contains(&(8000.0, 1.0)));
        assert_eq!(decimate_min_max(&[1.0, 2.0], 100).len(), 2);
        assert!(decimate_min_max(&[], 100).is_empty());
    }

    #[test]
    fn spread_pick_keeps_ends() {
        let v: Vec<f64> = (0..1000).map(f64::from).collect();
        let p = spread_pick(&v, 40);
        assert_eq!(p.len(), 40);
        assert_eq!((p[0], p[39]), (0.0, 999.0));
    }
}
