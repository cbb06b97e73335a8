//! `samples.csv`: one row per message of the ping-pong experiment.
//!
//! RFC 4180 text: comma-separated, a field is quoted (`"…"`, with `""` for a quote) when it holds
//! a comma, a quote or a line break. The reader accepts LF or CRLF line ends, skips empty lines,
//! requires the exact header below and reports every problem as file:line:column, where the
//! column is the 1-based field number (with the field's name). It never panics on bad input.

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use ivnsec_core::profile::NamedProfile;

use super::summary::{ReportError, ScenarioRun};
use crate::pingpong::Exchange;

/// The header, in column order.
pub const HEADER: [&str; 14] = [
    "scenario",
    "profile",
    "payload",
    "frame_bytes",
    "replication",
    "index",
    "payload_ns",
    "protect_ns",
    "round_trip_ns",
    "verify_ns",
    "resp_verify_ns",
    "resp_protect_ns",
    "owd_direct_ns",
    "lost",
];

fn push_field(out: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        out.push('"');
        out.push_str(&s.replace('"', "\"\""));
        out.push('"');
    } else {
        out.push_str(s);
    }
}

/// Writes the scenarios' exchanges, scenario by scenario, each in measurement order.
pub fn write_samples(path: &Path, scenarios: &[ScenarioRun]) -> Result<(), ReportError> {
    let io = |e| ReportError::io(path, e);
    let file = std::fs::File::create(path).map_err(io)?;
    let mut w = std::io::BufWriter::new(file);
    w.write_all(HEADER.join(",").as_bytes()).map_err(io)?;
    w.write_all(b"\n").map_err(io)?;
    let mut line = String::with_capacity(160);
    for s in scenarios {
        let mut prefix = String::new();
        push_field(&mut prefix, &s.name);
        prefix.push(',');
        push_field(&mut prefix, s.profile.name());
        for e in &s.exchanges {
            line.clear();
            line.push_str(&prefix);
            // Writing into a String cannot fail.
            let _ = write!(
                line,
                ",{},{},{},{},{},{},{},{},{},{},",
                s.payload,
                s.frame_bytes,
                e.replication,
                e.index,
                e.payload_ns,
                e.protect_ns,
                e.round_trip_ns,
                e.verify_ns,
                e.resp_verify_ns,
                e.resp_protect_ns
            );
            if let Some(d) = e.owd_direct_ns {
                let _ = write!(line, "{d}");
            }
            line.push_str(if e.lost { ",1\n" } else { ",0\n" });
            w.write_all(line.as_bytes()).map_err(io)?;
        }
    }
    w.flush().map_err(io)
}

/// Reads `samples.csv` into scenarios, in order of first appearance; each scenario's rows keep
/// file order (the measurement order the pWCET blocks rely on).
pub fn read_samples(path: &Path) -> Result<Vec<ScenarioRun>, ReportError> {
    let bytes = std::fs::read(path).map_err(|e| ReportError::io(path, e))?;
    parse_samples(path, &bytes)
}

/// One parsed field: its text and the line it starts on.
struct Field {
    text: String,
    line: usize,
}

/// Splits CSV text into records. Each record is its fields; quoted fields may span lines.
fn records(path: &Path, text: &str) -> Result<Vec<Vec<Field>>, ReportError> {
    let err = |line: usize, column: usize, message: String| ReportError::Csv {
        path: path.to_path_buf(),
        line,
        column,
        field: None,
        message,
    };
    let mut out = Vec::new();
    let mut record: Vec<Field> = Vec::new();
    let mut cur = String::new();
    let mut cur_line = 1;
    let mut line = 1;
    let mut quoted = false; // inside a quoted field
    let mut was_quoted = false; // the current field was quoted and has closed
    let mut chars = text.chars().peekable();
    let end_field = |record: &mut Vec<Field>, cur: &mut String, cur_line: usize| {
        record.push(Field {
            text: std::mem::take(cur),
            line: cur_line,
        });
    };
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    cur.push('"');
                }
                '"' => {
                    quoted = false;
                    was_quoted = true;
                }
                '\n' => {
                    line += 1;
                    cur.push('\n');
                }
                _ => cur.push(c),
            }
            continue;
        }
        match c {
            ',' => {
                end_field(&mut record, &mut cur, cur_line);
                was_quoted = false;
                cur_line = line;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                // An empty line (no field started) is skipped.
                if !(record.is_empty() && cur.is_empty() && !was_quoted) {
                    end_field(&mut record, &mut cur, cur_line);
                    out.push(std::mem::take(&mut record));
                }
                was_quoted = false;
                line += 1;
                cur_line = line;
            }
            '"' if cur.is_empty() && !was_quoted => quoted = true,
            '"' => {
                return Err(err(
                    line,
                    record.len() + 1,
                    "a quote inside an unquoted field (quote the whole field and double the quote)"
                        .into(),
                ));
            }
            _ if was_quoted => {
                return Err(err(
                    line,
                    record.len() + 1,
                    format!("unexpected {c:?} after a closing quote"),
                ));
            }
            _ => cur.push(c),
        }
    }
    if quoted {
        return Err(err(
            cur_line,
            record.len() + 1,
            "quoted field not closed before the end of the file".into(),
        ));
    }
    if !(record.is_empty() && cur.is_empty() && !was_quoted) {
        end_field(&mut record, &mut cur, cur_line);
        out.push(record);
    }
    Ok(out)
}

/// Parses the bytes of a samples file; `path` is only used in errors.
pub fn parse_samples(path: &Path, bytes: &[u8]) -> Result<Vec<ScenarioRun>, ReportError> {
    let text = utf8(path, bytes)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let recs = records(path, text)?;
    let mut it = recs.into_iter();
    let Some(header) = it.next() else {
        return Err(ReportError::Csv {
            path: path.to_path_buf(),
            line: 1,
            column: 1,
            field: None,
            message: format!("empty file; expected the header {}", HEADER.join(",")),
        });
    };
    check_header(path, &header)?;
    let mut scenarios = Scenarios::default();
    for rec in it {
        let row = parse_row(path, &rec)?;
        scenarios.add(path, &rec, row)?;
    }
    Ok(scenarios.runs)
}

/// The text of a samples file, or where it stops being UTF-8.
fn utf8<'a>(path: &Path, bytes: &'a [u8]) -> Result<&'a str, ReportError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let upto = &bytes[..e.valid_up_to()];
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = upto.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let column = upto[line_start..].iter().filter(|&&b| b == b',').count() + 1;
        ReportError::Csv {
            path: path.to_path_buf(),
            line,
            column,
            field: HEADER.get(column - 1).copied(),
            message: "not valid UTF-8".into(),
        }
    })
}

/// Checks that the header record is [`HEADER`], column by column.
fn check_header(path: &Path, header: &[Field]) -> Result<(), ReportError> {
    for (i, name) in HEADER.iter().enumerate() {
        match header.get(i) {
            Some(f) if f.text.trim() == *name => {}
            Some(f) => {
                return Err(ReportError::Csv {
                    path: path.to_path_buf(),
                    line: f.line,
                    column: i + 1,
                    field: Some(name),
                    message: format!("header has {:?} where {name:?} belongs", f.text),
                });
            }
            None => {
                return Err(ReportError::Csv {
                    path: path.to_path_buf(),
                    line: header.first().map_or(1, |f| f.line),
                    column: i + 1,
                    field: Some(name),
                    message: format!("header ends before column {name:?}"),
                });
            }
        }
    }
    if let Some(extra) = header.get(HEADER.len()) {
        return Err(ReportError::Csv {
            path: path.to_path_buf(),
            line: extra.line,
            column: HEADER.len() + 1,
            field: None,
            message: format!("unexpected extra header column {:?}", extra.text),
        });
    }
    Ok(())
}

/// A problem in field `col` of the record `rec`.
fn field_error(path: &Path, rec: &[Field], col: usize, message: String) -> ReportError {
    ReportError::Csv {
        path: path.to_path_buf(),
        line: rec[col].line,
        column: col + 1,
        field: Some(HEADER[col]),
        message,
    }
}

/// One row of samples.csv: the scenario it belongs to and its exchange.
struct Row<'a> {
    name: &'a String,
    profile: &'a String,
    payload: usize,
    frame_bytes: usize,
    exchange: Exchange,
}

/// Digits only: no sign, no spaces, no exponent.
fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses one record after the header, every field checked.
fn parse_row<'a>(path: &Path, rec: &'a [Field]) -> Result<Row<'a>, ReportError> {
    let row_line = rec.first().map_or(0, |f| f.line);
    if rec.len() != HEADER.len() {
        let column = rec.len().min(HEADER.len()) + 1;
        return Err(ReportError::Csv {
            path: path.to_path_buf(),
            line: rec.last().map_or(row_line, |f| f.line),
            column,
            field: HEADER.get(column - 1).copied(),
            message: format!("expected {} columns, found {}", HEADER.len(), rec.len()),
        });
    }
    let fail = |col: usize, message: String| field_error(path, rec, col, message);
    let uint = |col: usize| -> Result<u64, ReportError> {
        num::<u64>(&rec[col].text).ok_or_else(|| {
            fail(
                col,
                format!("{:?} is not a whole number of 0 to 2^64-1", rec[col].text),
            )
        })
    };
    let u32f = |col: usize| -> Result<u32, ReportError> {
        num::<u32>(&rec[col].text).ok_or_else(|| {
            fail(
                col,
                format!("{:?} is not a whole number of 0 to 2^32-1", rec[col].text),
            )
        })
    };
    let usizef = |col: usize| -> Result<usize, ReportError> {
        num::<usize>(&rec[col].text)
            .ok_or_else(|| fail(col, format!("{:?} is not a byte count", rec[col].text)))
    };
    let name = &rec[0].text;
    if name.is_empty() {
        return Err(fail(0, "empty scenario name".into()));
    }
    let profile = &rec[1].text;
    if profile.is_empty() {
        return Err(fail(1, "empty profile".into()));
    }
    let payload = usizef(2)?;
    let frame_bytes = usizef(3)?;
    let owd_direct_ns = if rec[12].text.is_empty() {
        None
    } else {
        Some(uint(12)?)
    };
    let lost = match rec[13].text.as_str() {
        "0" => false,
        "1" => true,
        other => return Err(fail(13, format!("{other:?} is not 0 or 1"))),
    };
    let exchange = Exchange {
        replication: u32f(4)?,
        index: u32f(5)?,
        payload_ns: uint(6)?,
        protect_ns: uint(7)?,
        round_trip_ns: uint(8)?,
        verify_ns: uint(9)?,
        resp_verify_ns: uint(10)?,
        resp_protect_ns: uint(11)?,
        owd_direct_ns,
        lost,
    };
    Ok(Row {
        name,
        profile,
        payload,
        frame_bytes,
        exchange,
    })
}

/// The scenarios read so far, in order of first appearance.
#[derive(Default)]
struct Scenarios {
    runs: Vec<ScenarioRun>,
    /// Line of each scenario's first row, for consistency errors.
    first_line: Vec<usize>,
    index: std::collections::HashMap<String, usize>,
}

impl Scenarios {
    /// Adds the row of record `rec` to its scenario, which must keep the profile, payload and
    /// frame size of its first row.
    fn add(&mut self, path: &Path, rec: &[Field], row: Row<'_>) -> Result<(), ReportError> {
        let fail = |col: usize, message: String| field_error(path, rec, col, message);
        let name = row.name;
        let i = match self.index.get(name) {
            Some(&i) => {
                let run = &self.runs[i];
                let first = self.first_line[i];
                if run.profile != row.profile.as_str() {
                    return Err(fail(
                        1,
                        format!(
                            "scenario {name:?} has profile {:?} on line {first}",
                            run.profile.name()
                        ),
                    ));
                }
                if run.payload != row.payload {
                    return Err(fail(
                        2,
                        format!(
                            "scenario {name:?} has payload {} on line {first}",
                            run.payload
                        ),
                    ));
                }
                if run.frame_bytes != row.frame_bytes {
                    return Err(fail(
                        3,
                        format!(
                            "scenario {name:?} has frame_bytes {} on line {first}",
                            run.frame_bytes
                        ),
                    ));
                }
                i
            }
            None => {
                // The profile is parsed once per scenario, at its first row (the rows after it
                // must spell it the same).
                let profile: NamedProfile = row
                    .profile
                    .parse()
                    .map_err(|e: ivnsec_core::profile::ProfileError| fail(1, e.to_string()))?;
                self.index.insert(name.clone(), self.runs.len());
                self.first_line.push(rec.first().map_or(0, |f| f.line));
                self.runs.push(ScenarioRun {
                    name: name.clone(),
                    profile,
                    payload: row.payload,
                    frame_bytes: row.frame_bytes,
                    exchanges: Vec::new(),
                });
                self.runs.len() - 1
            }
        };
        self.runs[i].exchanges.push(row.exchange);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Vec<ScenarioRun>, ReportError> {
        parse_samples(Path::new("dir/samples.csv"), s.as_bytes())
    }

    const H: &str = "scenario,profile,payload,frame_bytes,replication,index,payload_ns,protect_ns,round_trip_ns,verify_ns,resp_verify_ns,resp_protect_ns,owd_direct_ns,lost\n";

    fn at(e: ReportError) -> (usize, usize, String) {
        match e {
            ReportError::Csv {
                line,
                column,
                ref message,
                ..
            } => {
                let shown = e.to_string();
                assert!(shown.starts_with("dir/samples.csv:"), "{shown}");
                (line, column, message.clone())
            }
            other => panic!("not a CSV error: {other}"),
        }
    }

    #[test]
    fn reads_rows_and_groups_scenarios() {
        let text = format!(
            "{H}plain@64,plain,64,78,0,0,10,20,300,40,5,6,150,0\r\n\
             \n\
             \"odd,name\",crc32,64,82,0,0,1,2,3,4,5,6,,1\n\
             plain@64,plain,64,78,0,1,11,21,301,41,5,6,151,0"
        );
        let runs = parse(&text).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].exchanges.len(), 2);
        assert_eq!(runs[0].exchanges[1].index, 1);
        assert_eq!(runs[0].exchanges[1].owd_direct_ns, Some(151));
        assert_eq!(runs[1].name, "odd,name");
        assert!(runs[1].exchanges[0].lost);
        assert_eq!(runs[1].exchanges[0].owd_direct_ns, None);
    }

    #[test]
    fn errors_name_line_and_column() {
        let row = "plain@64,plain,64,78,0,0,10,20,300,40,5,6,150,0\n";
        let (l, c, m) = at(parse(&format!("{H}{row}{}", row.replace("300", "3x0"))).unwrap_err());
        assert_eq!((l, c), (3, 9), "{m}");
        let (l, c, _) = at(parse(&format!("{H}{row}{}", row.replace(",0\n", ",2\n"))).unwrap_err());
        assert_eq!((l, c), (3, 14));
        let (l, c, _) = at(parse(&format!("{H}{}", row.replace(",150,0", ""))).unwrap_err());
        assert_eq!((l, c), (2, 13), "too few columns: the first missing one");
        let (l, c, _) = at(parse(&format!("{H}{}", row.replace(",0\n", ",0,9\n"))).unwrap_err());
        assert_eq!((l, c), (2, 15), "too many columns");
        let (l, c, _) =
            at(parse(&format!("{H}{row}{}", row.replace(",64,78", ",64,79"))).unwrap_err());
        assert_eq!((l, c), (3, 4), "frame_bytes changed within a scenario");
        // The profile is parsed where samples.csv is read: an unknown one is refused there.
        let (l, c, m) =
            at(parse(&format!("{H}{}", row.replace(",plain,", ",aes999-gcm,"))).unwrap_err());
        assert_eq!((l, c), (2, 2), "{m}");
        assert_eq!(
            m,
            "profile `aes999-gcm`: unknown suite (see `ivnsec suites`)"
        );
        let (l, c, m) = at(parse(&format!(
            "{H}{row}{}",
            row.replace(",plain,", ",plain/none,")
        ))
        .unwrap_err());
        assert_eq!((l, c), (3, 2), "another spelling within a scenario: {m}");
        assert_eq!(m, "scenario \"plain@64\" has profile \"plain\" on line 2");
        let (l, c, _) = at(parse(&format!("{H}{}", row.replace(",10,", ",-10,"))).unwrap_err());
        assert_eq!((l, c), (2, 7));
        let (l, c, _) = at(parse(&format!(
            "{H}{}",
            row.replace(",5,6,", ",5,99999999999999999999,")
        ))
        .unwrap_err());
        assert_eq!((l, c), (2, 12), "overflow");
        let (l, c, _) =
            at(parse(&format!("{H}{}", row.replace(",0,0,", ",0,4294967296,"))).unwrap_err());
        assert_eq!((l, c), (2, 6), "index beyond u32");
        let (l, c, _) = at(parse(&H.replace("verify_ns,resp", "verify,resp")).unwrap_err());
        assert_eq!((l, c), (1, 10));
        let (l, c, _) = at(parse("").unwrap_err());
        assert_eq!((l, c), (1, 1));
        let (l, c, _) = at(parse(&format!("{H}\"plain@64,plain,64")).unwrap_err());
        assert_eq!((l, c), (2, 1), "unterminated quote");
        let (l, c, _) = at(parse(&format!("{H}pl\"ain,plain,64")).unwrap_err());
        assert_eq!((l, c), (2, 1));
        let (l, c, _) =
            at(parse(&format!("{H},plain,64,78,0,0,10,20,300,40,5,6,150,0\n")).unwrap_err());
        assert_eq!((l, c), (2, 1), "empty scenario name");
        let mut bad = format!("{H}{row}").into_bytes();
        bad.extend_from_slice(b"plain@64,pl\xffain");
        match parse_samples(Path::new("x.csv"), &bad).unwrap_err() {
            ReportError::Csv { line, column, .. } => assert_eq!((line, column), (3, 2)),
            e => panic!("{e}"),
        }
    }

    #[test]
    fn header_only_is_no_scenarios() {
        assert!(parse(H).unwrap().is_empty());
    }

    proptest::proptest! {
        /// Arbitrary bytes give an error or a result, never a panic.
        #[test]
        fn never_panics(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let mut b = H.as_bytes().to_vec();
            b.extend_from_slice(&tail);
            let _ = parse_samples(Path::new("p.csv"), &b);
            let _ = parse_samples(Path::new("p.csv"), &tail);
        }

        /// Rows built from a small alphabet (digits, commas, quotes, line ends) never panic.
        #[test]
        fn csv_like_text_never_panics(s in "[0-9a,\"\r\n@/]{0,120}") {
            let _ = parse(&format!("{H}{s}"));
        }
    }
}
