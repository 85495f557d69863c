//! Stats: the few statistics `runlog report --baseline` needs to say whether a share moved
//! more than chance would explain — the normal tail (via `erfc`), the pooled two-proportion
//! z-test, and Holm's step-down correction for testing many shares at once.
//!
//! Written here (a few dozen lines, tested against known values) rather than pulling a
//! statistics crate for three functions.

/// The significance level of the baseline comparison.
pub const ALPHA: f64 = 0.05;

/// The complementary error function, `erfc(x) = 1 - erf(x)`, by the Chebyshev fit of
/// Numerical Recipes (`erfcc`): fractional error below 1.2e-7 everywhere.
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let ans = t * poly.exp();
    if x >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

/// The two-sided tail probability of a standard normal beyond `|z|`.
pub fn two_sided_p(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2).clamp(0.0, 1.0)
}

/// A two-proportion z-test's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZTest {
    /// `(p2 - p1) / se` with the pooled standard error.
    pub z: f64,
    /// Two-sided p-value.
    pub p_value: f64,
}

/// The pooled two-proportion z-test of `x1` successes in `n1` trials against `x2` in `n2`
/// (counts may be fractional when they come from rounded rates). `None` when it cannot be
/// computed: an empty side, or a pooled share of exactly 0 or 1 (no variance).
pub fn two_proportion(x1: f64, n1: f64, x2: f64, n2: f64) -> Option<ZTest> {
    if n1.is_nan()
        || n2.is_nan()
        || n1 <= 0.0
        || n2 <= 0.0
        || x1 < 0.0
        || x2 < 0.0
        || x1 > n1
        || x2 > n2
    {
        return None;
    }
    let pooled = (x1 + x2) / (n1 + n2);
    let var = pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2);
    if var.is_nan() || var <= 0.0 {
        return None;
    }
    let z = (x2 / n2 - x1 / n1) / var.sqrt();
    Some(ZTest {
        z,
        p_value: two_sided_p(z),
    })
}

/// Holm's step-down adjusted p-values, in the order given: sorted ascending, the i-th
/// smallest (from 0) becomes `max over j <= i of min(1, (m - j) * p_(j))`. A hypothesis is
/// rejected at level `alpha` when its adjusted p-value is at most `alpha` — the same as
/// Holm's rule of comparing `p_(i)` with `alpha / (m - i)` and stopping at the first miss.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]).then(a.cmp(&b)));
    let mut adjusted = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}
