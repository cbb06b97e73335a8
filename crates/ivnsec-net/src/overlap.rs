//! Overlapping a byte stream's system calls with the caller's own work, on a second thread.
//!
//! - [`WriteBehind`]: the caller fills buffers while a writer thread hands the previous ones to
//!   the kernel (`write_all`), so what is computed for the next write (e.g. protecting it) does
//!   not leave the connection idle.
//! - [`ReadAhead`]: a reader thread reads the stream into buffers while the caller consumes the
//!   previous ones through [`std::io::Read`], so what is done with the bytes (e.g. verifying
//!   them) does not leave the socket unread.
//!
//! Both hold a fixed number of buffers of a fixed size, allocated once: nothing is allocated per
//! write or read, and no more than `buffers × capacity` bytes are ever held. Bytes are passed on
//! in order, untouched; no protocol logic lives here.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::sys::monotonic_ns;

/// What a [`WriteBehind`]'s writer thread did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WriteLog {
    /// Bytes written.
    pub bytes: u64,
    /// Buffers written (one `write_all` each).
    pub writes: u64,
    /// [`monotonic_ns`] when the last write returned (0 when nothing was written).
    pub last_ns: u64,
}

/// A buffer the writer thread should write: its first `len` bytes.
struct Filled(Vec<u8>, usize);

/// Writes buffers to `W` on a thread of its own while the caller fills the next ones.
///
/// ```
/// use ivnsec_net::overlap::WriteBehind;
/// let mut w = WriteBehind::spawn(Vec::new(), 2, 4);
/// for word in [b"ab", b"cd"] {
///     let mut buf = w.buffer().unwrap();
///     buf[..2].copy_from_slice(word);
///     w.submit(buf, 2).unwrap();
/// }
/// let (out, log) = w.finish().unwrap();
/// assert_eq!((out, log.writes), (b"abcd".to_vec(), 2));
/// ```
pub struct WriteBehind<W: Write + Send + 'static> {
    filled: Option<SyncSender<Filled>>,
    empty: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<(W, io::Result<()>, WriteLog)>>,
}

impl<W: Write + Send + 'static> WriteBehind<W> {
    /// A writer thread for `dst` with `buffers` buffers (≥ 2 to overlap anything; at least 1)
    /// of `capacity` bytes each.
    pub fn spawn(dst: W, buffers: usize, capacity: usize) -> WriteBehind<W> {
        let buffers = buffers.max(1);
        let (filled_tx, filled_rx) = sync_channel::<Filled>(buffers);
        let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(buffers);
        for _ in 0..buffers {
            // The channel holds `buffers` items and its receiver is alive: this cannot fail.
            let _ = empty_tx.send(vec![0u8; capacity]);
        }
        let thread = std::thread::spawn(move || {
            let mut dst = dst;
            let mut log = WriteLog::default();
            for Filled(buf, len) in filled_rx.iter() {
                if let Err(e) = dst.write_all(&buf[..len.min(buf.len())]) {
                    return (dst, Err(e), log);
                }
                log.bytes += len as u64;
                log.writes += 1;
                log.last_ns = monotonic_ns();
                // The caller may have stopped taking buffers; that is not an error here.
                let _ = empty_tx.send(buf);
            }
            let r = dst.flush();
            (dst, r, log)
        });
        WriteBehind {
            filled: Some(filled_tx),
            empty: empty_rx,
            thread: Some(thread),
        }
    }

    /// The next buffer to fill, of the capacity given to [`spawn`](Self::spawn) (its old
    /// contents are left as they were). Waits while every buffer is queued for writing; an
    /// error (`BrokenPipe`) once the writer thread stopped on a write error, which
    /// [`finish`](Self::finish) returns.
    pub fn buffer(&mut self) -> io::Result<Vec<u8>> {
        self.empty.recv().map_err(|_| writer_gone())
    }

    /// Queues `buf[..len]` for writing, in order after the buffers queued before.
    pub fn submit(&mut self, buf: Vec<u8>, len: usize) -> io::Result<()> {
        match &self.filled {
            Some(tx) => tx.send(Filled(buf, len)).map_err(|_| writer_gone()),
            None => Err(writer_gone()),
        }
    }

    /// Writes what is still queued, stops the thread and returns the destination and what was
    /// written; the first write error if there was one.
    pub fn finish(mut self) -> io::Result<(W, WriteLog)> {
        self.filled = None;
        let thread = self.thread.take().ok_or_else(writer_gone)?;
        let (dst, r, log) = thread
            .join()
            .map_err(|_| io::Error::other("the writer thread panicked"))?;
        r.map(|()| (dst, log))
    }
}

impl<W: Write + Send + 'static> Drop for WriteBehind<W> {
    fn drop(&mut self) {
        self.filled = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn writer_gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the writer thread stopped")
}

/// A chunk the reader thread read: `buf[..len]`, of which the caller has consumed `pos`.
struct Chunk {
    buf: Vec<u8>,
    len: usize,
    pos: usize,
}

/// Reads a stream on a thread of its own into a fixed set of buffers; the caller reads the
/// same bytes, in order, through [`Read`].
///
/// End of stream, and a read error other than a timeout, end the thread; the caller sees
/// them after the bytes read before them. A `read` that finds nothing within `poll` returns
/// `TimedOut` (so a caller can check a stop flag, as with a socket's read timeout). The source
/// should have a read timeout of its own: the thread checks for its `ReadAhead` being
/// dropped between reads, and dropping waits for the thread.
///
/// ```
/// use std::io::Read;
/// use ivnsec_net::overlap::ReadAhead;
/// use std::time::Duration;
/// let mut r = ReadAhead::spawn(&b"hello"[..], 2, 3, Duration::from_secs(1));
/// let mut s = String::new();
/// r.read_to_string(&mut s).unwrap();
/// assert_eq!(s, "hello");
/// ```
pub struct ReadAhead {
    filled: Receiver<io::Result<(Vec<u8>, usize)>>,
    /// `None` only while dropping (the thread then sees its free list end).
    empty: Option<SyncSender<Vec<u8>>>,
    current: Option<Chunk>,
    poll: Duration,
    closed: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ReadAhead {
    /// A reader thread for `src` with `buffers` buffers (at least 1) of `capacity` bytes each
    /// (at least 1): at most that many bytes are read ahead of the caller.
    pub fn spawn<R: Read + Send + 'static>(
        src: R,
        buffers: usize,
        capacity: usize,
        poll: Duration,
    ) -> ReadAhead {
        let buffers = buffers.max(1);
        let capacity = capacity.max(1);
        let (filled_tx, filled_rx) = sync_channel(buffers);
        let (empty_tx, empty_rx) = sync_channel::<Vec<u8>>(buffers);
        for _ in 0..buffers {
            // The channel holds `buffers` items and its receiver is alive: this cannot fail.
            let _ = empty_tx.send(vec![0u8; capacity]);
        }
        let closed = Arc::new(AtomicBool::new(false));
        let stop = closed.clone();
        let thread = std::thread::spawn(move || {
            let mut src = src;
            // Ends when the caller is gone (its ends of the channels dropped).
            while let Ok(mut buf) = empty_rx.recv() {
                let item = loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    match src.read(&mut buf) {
                        Ok(0) => return,
                        Ok(n) => break Ok((buf, n)),
                        Err(e) if is_transient(&e) => continue,
                        Err(e) => break Err(e),
                    }
                };
                let last = item.is_err();
                if filled_tx.send(item).is_err() || last {
                    return;
                }
            }
        });
        ReadAhead {
            filled: filled_rx,
            empty: Some(empty_tx),
            current: None,
            poll,
            closed,
            thread: Some(thread),
        }
    }
}

fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        loop {
            if let Some(c) = &mut self.current {
                if c.pos < c.len {
                    let n = out.len().min(c.len - c.pos);
                    out[..n].copy_from_slice(&c.buf[c.pos..c.pos + n]);
                    c.pos += n;
                    return Ok(n);
                }
                if let (Some(c), Some(empty)) = (self.current.take(), &self.empty) {
                    // Never full (it holds every buffer at most); if the reader thread has
                    // ended, the buffer is simply dropped.
                    let _ = empty.try_send(c.buf);
                }
            }
            match self.filled.recv_timeout(self.poll) {
                Ok(Ok((buf, len))) => self.current = Some(Chunk { buf, len, pos: 0 }),
                Ok(Err(e)) => return Err(e),
                Err(RecvTimeoutError::Timeout) => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "nothing read ahead in time",
                    ));
                }
                Err(RecvTimeoutError::Disconnected) => return Ok(0),
            }
        }
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // The thread stops before its next read, or when it waits for a free buffer. Handing a
        // chunk over never blocks it: the channel has room for every buffer.
        self.closed.store(true, Ordering::Relaxed);
        self.empty = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 + i / 251) as u8).collect()
    }

    /// Hands out at most `step` bytes per call and fails with `fail` at the end, if given.
    struct Trickle {
        data: Vec<u8>,
        pos: usize,
        step: usize,
        fail: Option<io::ErrorKind>,
        timeouts: usize,
    }
    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.timeouts > 0 {
                self.timeouts -= 1;
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.step).min(self.data.len() - self.pos);
            if n == 0
                && let Some(k) = self.fail
            {
                return Err(k.into());
            }
            buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    fn trickle(n: usize, step: usize) -> Trickle {
        Trickle {
            data: data(n),
            pos: 0,
            step,
            fail: None,
            timeouts: 3,
        }
    }

    /// Every byte arrives once, in order, whatever the source's pieces, the buffers' size and
    /// the caller's reads; transient errors of the source are retried, not passed on; end of
    /// stream reads as 0.
    #[test]
    fn read_ahead_passes_the_stream_on_unchanged() {
        for (step, buffers, capacity, take) in [
            (1 << 20, 4, 256 << 10, 1 << 16),
            (1448, 2, 1000, 7),
            (7, 1, 1, 4096),
            (65_536, 3, 65_536, 65_536),
        ] {
            let want = data(300_001);
            let mut r = ReadAhead::spawn(
                trickle(want.len(), step),
                buffers,
                capacity,
                Duration::from_secs(5),
            );
            let mut got = Vec::new();
            let mut piece = vec![0u8; take];
            loop {
                let n = r.read(&mut piece).unwrap();
                if n == 0 {
                    break;
                }
                assert!(n <= capacity.min(take));
                got.extend_from_slice(&piece[..n]);
            }
            assert_eq!(got, want, "{step} {buffers} {capacity} {take}");
            assert_eq!(r.read(&mut piece).unwrap(), 0);
        }
    }

    /// A read error of the source comes after the bytes read before it, once; a source that
    /// gives nothing yields `TimedOut` within the poll time, not a hang.
    #[test]
    fn read_ahead_errors_and_timeouts() {
        let mut t = trickle(10_000, 1000);
        t.fail = Some(io::ErrorKind::ConnectionReset);
        let mut r = ReadAhead::spawn(t, 2, 4096, Duration::from_secs(5));
        let mut got = Vec::new();
        let err = loop {
            let mut b = [0u8; 3000];
            match r.read(&mut b) {
                Ok(0) => panic!("end of stream instead of the error"),
                Ok(n) => got.extend_from_slice(&b[..n]),
                Err(e) => break e,
            }
        };
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset);
        assert_eq!(got, data(10_000));
        assert_eq!(r.read(&mut [0u8; 8]).unwrap(), 0);

        /// Never has anything: a socket whose peer is silent.
        struct Silent;
        impl Read for Silent {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                std::thread::sleep(Duration::from_millis(5));
                Err(io::ErrorKind::TimedOut.into())
            }
        }
        let mut r = ReadAhead::spawn(Silent, 2, 16, Duration::from_millis(20));
        let e = r.read(&mut [0u8; 8]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        // Dropping ends the thread (it checks between its reads).
        drop(r);
    }

    /// A caller that stops reading early drops the reader without waiting for the stream's end,
    /// and the reader never holds more than its buffers.
    #[test]
    fn read_ahead_holds_at_most_its_buffers() {
        struct Endless(Arc<std::sync::atomic::AtomicUsize>);
        impl Read for Endless {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                self.0.fetch_add(buf.len(), Ordering::Relaxed);
                Ok(buf.len())
            }
        }
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut r = ReadAhead::spawn(Endless(count.clone()), 3, 1000, Duration::from_secs(5));
        let mut b = [0u8; 10];
        assert_eq!(r.read(&mut b).unwrap(), 10);
        std::thread::sleep(Duration::from_millis(50));
        // Three buffers read ahead at most, plus one being filled when the caller returns one.
        assert!(count.load(Ordering::Relaxed) <= 4 * 1000);
        drop(r);
    }

    /// Buffers are written in the order submitted, each with its own length, and the log
    /// counts them; a write error stops the writer and comes back from `buffer`/`submit` as
    /// `BrokenPipe` and from `finish` as the error itself.
    #[test]
    fn write_behind_writes_in_order_and_reports_errors() {
        let want = data(100_000);
        let mut w = WriteBehind::spawn(Vec::new(), 3, 4096);
        let mut writes = 0;
        for piece in want.chunks(3001) {
            let mut buf = w.buffer().unwrap();
            assert_eq!(buf.len(), 4096);
            buf[..piece.len()].copy_from_slice(piece);
            w.submit(buf, piece.len()).unwrap();
            writes += 1;
        }
        let (out, log) = w.finish().unwrap();
        assert_eq!(out, want);
        assert_eq!((log.bytes, log.writes), (want.len() as u64, writes));
        assert!(log.last_ns > 0);

        /// Takes `room` bytes, then fails.
        #[derive(Debug)]
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if self.0 == 0 {
                    return Err(io::ErrorKind::ConnectionReset.into());
                }
                let n = b.len().min(self.0);
                self.0 -= n;
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut w = WriteBehind::spawn(Full(10_000), 2, 4096);
        let mut failed = None;
        for i in 0..100 {
            let r = w.buffer().and_then(|b| w.submit(b, 4096));
            if let Err(e) = r {
                failed = Some((i, e.kind()));
                break;
            }
        }
        let (i, kind) = failed.expect("the writer's error reaches the caller");
        assert!(i < 10, "{i}");
        assert_eq!(kind, io::ErrorKind::BrokenPipe);
        let e = w.finish().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset);
    }
}
