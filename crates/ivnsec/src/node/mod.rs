//! Nodes: what runs inside an ECU (the roles of the experiments), the secured channel and link
//! they use, and the orchestration that starts them.

pub mod attack;
pub mod camera;
pub mod channel;
pub mod highwater;
pub mod keyfile;
pub mod link;
pub mod orchestrate;
pub mod pingpong;
pub mod throughput;
