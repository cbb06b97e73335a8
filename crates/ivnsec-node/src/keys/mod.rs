//! Long-term keys: key files (bounded, private, one profile each), MKA's pre-shared CAK files,
//! the nonce high-water mark every sender under such a key keeps on disk
//! (docs/nonce-safety.md), and an MKA member's used-SAK record (docs/mka.md).

pub mod highwater;
pub mod keyfile;
pub mod psk;
pub mod used_sak;
