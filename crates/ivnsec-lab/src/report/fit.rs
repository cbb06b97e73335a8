//! Latency as a linear function of the payload (seed 000 §4.2.3, Fig. 20–21): an ordinary
//! least-squares line through (payload, latency) points and the payload at which that line
//! reaches a deadline.

use serde::Serialize;

/// y = intercept + slope · x, fitted by ordinary least squares.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LinearFit {
    pub slope: f64,
    pub intercept: f64,
    /// Coefficient of determination; `None` when every y is equal (no variance to explain).
    pub r2: Option<f64>,
    pub points: usize,
}

impl LinearFit {
    /// The line's value at `x`.
    pub fn at(&self, x: f64) -> f64 {
        self.intercept + self.slope * x
    }

    /// The smallest x ≥ 0 at which the line reaches `y`: 0 when it is already at or above `y`
    /// at x = 0, `None` when it never gets there (slope ≤ 0 and below `y` at 0).
    pub fn crossing(&self, y: f64) -> Option<f64> {
        if self.intercept >= y {
            Some(0.0)
        } else if self.slope > 0.0 {
            Some((y - self.intercept) / self.slope)
        } else {
            None
        }
    }
}

/// Least-squares fit of finite points; `None` for fewer than two points or when every x is
/// equal (no line is determined).
pub fn least_squares(points: &[(f64, f64)]) -> Option<LinearFit> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite())
        .collect();
    let n = pts.len();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / nf;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / nf;
    // Centred sums: numerically stable for payloads in the thousands and latencies in µs.
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let syy: f64 = pts.iter().map(|p| (p.1 - my).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let r2 = (syy > 0.0).then(|| {
        let sse: f64 = pts
            .iter()
            .map(|p| (p.1 - (intercept + slope * p.0)).powi(2))
            .sum();
        1.0 - sse / syy
    });
    Some(LinearFit {
        slope,
        intercept,
        r2,
        points: n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn exact_line_is_recovered() {
        // y = 100 + 2x through three points.
        let f = least_squares(&[(0.0, 100.0), (10.0, 120.0), (50.0, 200.0)]).unwrap();
        assert!(close(f.slope, 2.0) && close(f.intercept, 100.0));
        assert!(close(f.r2.unwrap(), 1.0));
        // 100 + 2x = 2500  ⇒  x = 1200.
        assert!(close(f.crossing(2500.0).unwrap(), 1200.0));
    }

    #[test]
    fn fit_matches_hand_computation() {
        // Points (64, 300), (128, 360), (736, 1100), (1440, 2000), worked by hand:
        // x̄ = 2368/4 = 592, ȳ = 3760/4 = 940.
        // Sxx = 528² + 464² + 144² + 848² = 278784 + 215296 + 20736 + 719104 = 1233920.
        // Sxy = (−528)(−640) + (−464)(−580) + (144)(160) + (848)(1060)
        //     = 337920 + 269120 + 23040 + 898880 = 1528960.
        // slope = 1528960 / 1233920 = 1.239105...,  intercept = 940 − 592·slope.
        // Syy = 640² + 580² + 160² + 1060² = 409600 + 336400 + 25600 + 1123600 = 1895200.
        // r² = Sxy² / (Sxx·Syy).
        let pts = [
            (64.0, 300.0),
            (128.0, 360.0),
            (736.0, 1100.0),
            (1440.0, 2000.0),
        ];
        let f = least_squares(&pts).unwrap();
        let slope = 1_528_960.0 / 1_233_920.0;
        let intercept = 940.0 - 592.0 * slope;
        assert!(close(f.slope, slope), "{}", f.slope);
        assert!(close(f.intercept, intercept), "{}", f.intercept);
        let r2 = 1_528_960.0f64.powi(2) / (1_233_920.0 * 1_895_200.0);
        assert!(close(f.r2.unwrap(), r2), "{:?}", f.r2);
        assert_eq!(f.points, 4);
        // Deadline 2500 µs: x = (2500 − intercept) / slope ≈ 1850.97 bytes (slope ≈ 1.239108 µs/B, intercept ≈ 206.448 µs).
        let x = f.crossing(2500.0).unwrap();
        assert!(close(x, (2500.0 - intercept) / slope));
        assert!((x - 1850.97).abs() < 0.01, "{x}");
        assert!(close(f.at(x), 2500.0));
    }

    #[test]
    fn degenerate_inputs() {
        assert!(least_squares(&[]).is_none());
        assert!(least_squares(&[(1.0, 2.0)]).is_none());
        assert!(
            least_squares(&[(1.0, 2.0), (1.0, 3.0)]).is_none(),
            "vertical"
        );
        assert!(least_squares(&[(1.0, f64::NAN), (2.0, 3.0)]).is_none());
        let flat = least_squares(&[(1.0, 5.0), (2.0, 5.0)]).unwrap();
        assert_eq!(flat.r2, None);
        assert_eq!(flat.crossing(10.0), None, "flat below never crosses");
        assert_eq!(flat.crossing(5.0), Some(0.0), "already there");
        let falling = least_squares(&[(0.0, 10.0), (1.0, 9.0)]).unwrap();
        assert_eq!(falling.crossing(20.0), None);
        assert_eq!(falling.crossing(3.0), Some(0.0));
    }
}
