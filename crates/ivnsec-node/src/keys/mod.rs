//! Long-term keys: key files (bounded, private, one profile each), MKA's pre-shared CAK files,
//! the nonce high-water mark every sender under such a key keeps on disk, the acceptance mark
//! every receiver under one keeps (docs/nonce-safety.md), and an MKA member's used-SAK record
//! (docs/mka.md).

pub mod ahead;
pub mod highwater;
pub mod keyfile;
pub mod psk;
pub mod rxmark;
#[cfg(test)]
mod test_dir;
pub mod used_sak;
