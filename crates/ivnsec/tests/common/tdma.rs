//! The flows files of the `tdma` tests (cli, testbed_ecus) and of `json_output`.

pub const TWO_FLOWS: &str = r#"
[[flow]]
name = "steer"
from = "ecu1"
to = "ecu2"
frame_bytes = 100

[[flow]]
name = "brake"
from = "ecu2"
to = "ecu1"
frame_bytes = 100
"#;
