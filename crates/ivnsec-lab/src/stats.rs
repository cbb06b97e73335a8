//! Descriptive statistics, hypothesis tests and extreme-value fits (being written).
