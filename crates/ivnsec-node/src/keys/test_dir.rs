//! A private temporary directory for the tests of the key states, removed when dropped.

use std::fs::{self, DirBuilder};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

pub struct TestDir(pub PathBuf);

impl TestDir {
    /// A fresh directory (mode 0700) named after `tag` and a random suffix.
    pub fn new(tag: &str) -> TestDir {
        let mut r = [0u8; 6];
        getrandom::fill(&mut r).unwrap();
        let p = std::env::temp_dir().join(format!("ivnsec-keys-{tag}-{}", hex::encode(r)));
        DirBuilder::new().mode(0o700).create(&p).unwrap();
        TestDir(p)
    }

    /// The state directory inside it (not created: the states create it).
    pub fn state(&self) -> PathBuf {
        self.0.join("state")
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}
