//! The sockets of `serve` and `call`, bound from the configuration (UDP and TCP endpoints of
//! the node, the SD socket with its multicast group, via `ivnsec_net::someip`); a failure is the
//! host's (exit 3) and says what to check.

use std::net::{SocketAddrV4, TcpListener, UdpSocket};
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use ivnsec_net::someip as net;

use super::capture::Capture;
use super::config::Config;
use super::server::Sockets;
use crate::error::EnvError;

fn bind_err(what: &str, addr: impl std::fmt::Display, e: std::io::Error) -> anyhow::Error {
    anyhow::Error::new(EnvError(format!(
        "cannot bind the {what} socket to {addr}: {e} (is the address on this host / in this namespace, and the port free?)"
    )))
}

/// The node's UDP endpoint (node.address, node.udp_port) with a read timeout.
pub fn bind_udp(cfg: &Config, read_timeout_ms: u64) -> Result<UdpSocket> {
    let addr = SocketAddrV4::new(cfg.node.address, cfg.node.udp_port);
    net::bind_udp(addr, Duration::from_millis(read_timeout_ms))
        .map_err(|e| bind_err("UDP", addr, e))
}

/// The SOME/IP-SD socket (sd.port, joined to sd.multicast when set).
pub fn bind_sd(cfg: &Config) -> Result<UdpSocket> {
    net::bind_sd(
        cfg.node.address,
        cfg.sd.port,
        cfg.sd.multicast,
        Duration::from_millis(50),
    )
    .map_err(|e| bind_err("SOME/IP-SD", format!("0.0.0.0:{}", cfg.sd.port), e))
}

/// A server's sockets: the UDP endpoint, the TCP listener (node.tcp_port, non-blocking) and
/// the SD socket (sd.enabled).
pub fn bind_server(cfg: &Config) -> Result<Sockets> {
    let udp = bind_udp(cfg, 100)?;
    let tcp = match cfg.node.tcp_port {
        Some(port) => {
            let addr = SocketAddrV4::new(cfg.node.address, port);
            let l = TcpListener::bind(addr).map_err(|e| bind_err("TCP", addr, e))?;
            l.set_nonblocking(true)?;
            Some(l)
        }
        None => None,
    };
    let sd = if cfg.sd.enabled {
        Some(bind_sd(cfg)?)
    } else {
        None
    };
    Ok(Sockets { udp, tcp, sd })
}

/// The `--pcap` capture of this node, or none.
pub fn capture(pcap: Option<&Path>, cfg: &Config) -> Result<Capture> {
    match pcap {
        Some(p) => Capture::create(p, cfg.node.address),
        None => Ok(Capture::off()),
    }
}
