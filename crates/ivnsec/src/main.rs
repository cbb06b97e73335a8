//! `ivnsec`: one binary, one module per subcommand.
#![forbid(unsafe_code)]

mod cli;
mod cmd;
mod daemon;
mod error;
mod interrupted;
mod output;
mod version;

use std::process::ExitCode;

use cli::Command;
use error::exit_code;

fn main() -> ExitCode {
    let cli = match cli::parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(daemon::ParseError::Clap(e)) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
        Err(daemon::ParseError::Config(e) | daemon::ParseError::Profile(e)) => {
            eprintln!("ivnsec: {e:#}");
            return ExitCode::from(exit_code(&e));
        }
    };
    let result = match cli.command {
        Command::Frame(args) => cmd::frame::run(args),
        Command::Pcap(args) => cmd::pcap::run(args),
        Command::CryptoBench(args) => cmd::crypto_bench::run(args),
        Command::TlsBench(args) => cmd::tls_bench::run(args),
        Command::Suites(args) => cmd::suites::run(args),
        Command::Testbed(args) => cmd::testbed::run(args),
        Command::Clock(args) => cmd::clock::run(args),
        Command::Hosts(args) => cmd::hosts::run(args),
        Command::Pingpong(args) => cmd::pingpong::run(args),
        Command::Node(args) => cmd::node::run(args),
        Command::Throughput(args) => cmd::throughput::run(args),
        Command::Camera(args) => cmd::camera::run(args),
        Command::Underload(args) => cmd::underload::run(args),
        Command::Playback(args) => cmd::playback::run(args),
        Command::Run(args) => cmd::run::run(args),
        Command::Validate(args) => cmd::validate::run(args),
        Command::Report(args) => cmd::report::run(args),
        Command::Attack(args) => cmd::attack::run(args),
        Command::Someip(args) => cmd::someip::run(args),
        Command::Send(args) => cmd::send::run(args),
        Command::Receive(args) => cmd::receive::run(args),
        Command::Keygen(args) => cmd::keygen::run(args),
        Command::Tdma(args) => cmd::tdma::run(args),
        Command::Macsec(args) => cmd::macsec::run(args),
        Command::Esp(args) => cmd::esp::run(args),
        Command::Gateway(args) => cmd::gateway::run(*args),
        Command::Pki(args) => cmd::pki::run(args),
        Command::Keyserver(args) => cmd::pki::keyserver(args),
        Command::Completions(args) => cmd::dist::completions(args, cli::full_command()),
        Command::Man(args) => cmd::dist::man(args, cli::full_command()),
    };
    match result {
        Ok(code) => code,
        // Stopped by a signal before it could write what it measured: still 128 + signal.
        Err(e) if interrupted::requested() => {
            eprintln!("ivnsec: {e:#}");
            ExitCode::from(ivnsec_lab::interrupt::exit_code())
        }
        Err(e) => {
            eprintln!("ivnsec: {e:#}");
            ExitCode::from(exit_code(&e))
        }
    }
}
