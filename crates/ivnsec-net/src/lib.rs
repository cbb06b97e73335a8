//! All I/O of ivnsec: sockets (the only place with `unsafe`, in `sys`), the namespace testbed,
//! timestamps. No protocol logic lives here.
