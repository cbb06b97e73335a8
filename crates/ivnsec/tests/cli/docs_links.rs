//! The documentation the program and the README point to exists: every `docs/….md` named in
//! the `--help` of any subcommand (walked from `ivnsec --help` down), in README.md, and every
//! relative `.md` link between the pages of docs/. And the plan examples of docs/plans.md are
//! plans `ivnsec` accepts.

use std::collections::BTreeSet;

use crate::common::cli::{help, subcommands};
use crate::common::repo;
use crate::common::{TempDir, text};

/// Every `docs/NAME.md` (NAME of letters, digits, `-`, `_`, `/`) in `s`.
fn doc_paths(s: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in s.match_indices("docs/") {
        let rest = &s[at..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_/.".contains(c)))
            .unwrap_or(rest.len());
        let path = rest[..end].trim_end_matches('.');
        if path.ends_with(".md") {
            found.insert(path.to_string());
        }
    }
    found
}

#[test]
fn every_docs_path_in_help_and_readme_exists() {
    let root = repo();
    let mut named: Vec<(String, String)> = Vec::new();
    // Walk the command tree from the top.
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    let mut seen = 0;
    while let Some(path) = todo.pop() {
        let h = help(&path);
        seen += 1;
        for d in doc_paths(&h) {
            named.push((format!("ivnsec {} --help", path.join(" ")), d));
        }
        for s in subcommands(&h) {
            let mut p = path.clone();
            p.push(s);
            todo.push(p);
        }
    }
    assert!(seen > 20, "walked only {seen} help texts");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    for d in doc_paths(&readme) {
        named.push(("README.md".to_string(), d));
    }
    // The help texts point to these (the check must see them to mean anything).
    for must in ["docs/plans.md", "docs/testbed.md"] {
        assert!(
            named.iter().any(|(w, d)| d == must && w.contains("--help")),
            "no help text names {must}: {named:?}"
        );
    }
    let missing: Vec<&(String, String)> = named
        .iter()
        .filter(|(_, d)| !root.join(d).is_file())
        .collect();
    assert!(missing.is_empty(), "named but missing: {missing:?}");
}

#[test]
fn relative_links_between_docs_pages_resolve() {
    let docs = repo().join("docs");
    let mut missing = Vec::new();
    let mut links = 0;
    for e in std::fs::read_dir(&docs).unwrap().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "md") {
            continue;
        }
        let s = std::fs::read_to_string(&p).unwrap();
        // `](target)` with a relative .md target, anchor dropped.
        for (at, _) in s.match_indices("](") {
            let rest = &s[at + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = rest[..end].split('#').next().unwrap();
            if target.contains("://") || !target.ends_with(".md") {
                continue;
            }
            links += 1;
            if !docs.join(target).is_file() {
                missing.push(format!("{}: {target}", p.display()));
            }
        }
    }
    assert!(links > 0);
    assert!(missing.is_empty(), "broken links: {missing:?}");
}

/// The fenced blocks of a Markdown text: (info string, body).
fn fenced(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, String)> = None;
    for l in md.lines() {
        match (&mut cur, l.strip_prefix("```")) {
            (None, Some(info)) => cur = Some((info.trim().to_string(), String::new())),
            (Some(_), Some(_)) => out.push(cur.take().unwrap()),
            (Some((_, body)), None) => {
                body.push_str(l);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

#[test]
fn plan_examples_in_docs_plans_md_are_accepted() {
    let md = std::fs::read_to_string(repo().join("docs/plans.md")).unwrap();
    let blocks = fenced(&md);
    let plans: Vec<&String> = blocks
        .iter()
        .filter(|(i, _)| i == "toml")
        .map(|(_, b)| b)
        .collect();
    assert!(plans.len() >= 4, "{} toml examples", plans.len());
    let dir = TempDir::new("plan-docs");
    // The playback example's timeline is the block that follows it.
    let csv = blocks
        .iter()
        .find(|(i, b)| i.is_empty() && b.starts_with("# seconds, bytes"))
        .expect("the timeline example");
    std::fs::write(dir.path("my-timeline.csv"), &csv.1).unwrap();
    for (k, plan) in plans.iter().enumerate() {
        let file = dir.path(&format!("example{k}.toml"));
        std::fs::write(&file, plan).unwrap();
        // `testbed up --plan` loads and checks the whole plan first; with no `ip` in PATH it
        // then stops with exit 3 (environment) before building anything. Exit 2 would be a
        // plan error.
        let empty = dir.path("empty-path");
        std::fs::create_dir_all(&empty).unwrap();
        let o = dir
            .cmd()
            .args(["testbed", "up", "--plan", file.to_str().unwrap()])
            .env("PATH", &empty)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(3),
            "example {k} of docs/plans.md:\n{plan}\n{}",
            text(&o.stderr)
        );
        assert!(text(&o.stderr).contains("iproute2"), "{}", text(&o.stderr));
    }
    // The control: a plan with a misspelt key is refused with exit 2 the same way.
    let bad = dir.path("bad.toml");
    std::fs::write(
        &bad,
        "[run]\ncout = 3\n[[scenario]]\nprofile = \"plain\"\npayload = 64\n",
    )
    .unwrap();
    let o = dir
        .cmd()
        .args(["testbed", "up", "--plan", bad.to_str().unwrap()])
        .env("PATH", dir.path("empty-path"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("cout"), "{}", text(&o.stderr));
}
