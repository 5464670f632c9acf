// SPDX-License-Identifier: GPL-2.0

//! The `rswapctl` command; everything is in the library.

use clap::{error::ErrorKind, CommandFactory, Parser};
use rswapctl::cli::{self, Cli};
use rswapctl::target::RealHost;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = Cli::parse();
    let generate = args.generate_man.is_some() || args.generate_completions.is_some();
    if args.command.is_none() && !generate {
        Cli::command()
            .error(ErrorKind::MissingSubcommand, "a subcommand is required")
            .exit();
    }
    let stdout = std::io::stdout();
    match cli::run(args, &RealHost, &mut stdout.lock()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("{failure}");
            ExitCode::FAILURE
        }
    }
}
