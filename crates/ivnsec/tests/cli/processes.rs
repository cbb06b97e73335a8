//! Every place the workspace starts a process gives it the kernel's parent-death signal (a
//! look at the sources). That no process outlives a killed run is a root test:
//! `testbed_pair/processes.rs`.

/// Every place the workspace starts a process (`.spawn()`, `.output()`, `.status()` of a
/// `Command`) goes through `die_with_parent` in the same statement, so a new spawn site cannot
/// quietly bring back processes that outlive ivnsec. Thread spawns take a closure and so never
/// match `.spawn()`; `#[cfg(test)]` code and `testbed exec` (`exec()`: no child) are not spawn
/// sites of a run.
#[test]
fn every_spawn_site_uses_die_with_parent() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    let mut dirs: Vec<std::path::PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    assert!(files.len() > 20, "found only {files:?}");
    let mut sites = 0;
    let mut missing = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(f).unwrap();
        let code = src.split("#[cfg(test)]").next().unwrap();
        for call in [".spawn()", ".output()", ".status()"] {
            for (at, _) in code.match_indices(call) {
                sites += 1;
                let stmt_start = code[..at].rfind(';').map_or(0, |i| i + 1);
                if !code[stmt_start..at].contains("die_with_parent") {
                    let line = code[..at].lines().count();
                    missing.push(format!("{}:{line}", f.display()));
                }
            }
        }
    }
    assert!(sites >= 10, "found only {sites} spawn sites");
    assert!(
        missing.is_empty(),
        "process spawns without ivnsec_net::sys::die_with_parent: {missing:?}"
    );
}
