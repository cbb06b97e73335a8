//! Nodes: what runs inside an ECU (the roles of the experiments), the secured channel and link
//! they use, and the orchestration that starts them.

pub mod attack;
pub mod camera;
pub mod channel;
pub mod fragment;
pub mod highwater;
pub mod keyfile;
pub mod link;
pub mod orchestrate;
pub mod pingpong;
pub mod throughput;
pub mod underload;

/// A flag that turns true when stdin reaches end of file: how an orchestrator tells a receiving
/// node to stop (it closes the node's stdin). The watching thread is not joined; it ends with
/// the process.
pub(crate) fn stop_on_stdin_eof() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::io::BufRead;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = std::io::stdin().lock().read_line(&mut sink);
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    stop
}
