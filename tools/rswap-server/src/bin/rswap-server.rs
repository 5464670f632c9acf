// SPDX-License-Identifier: GPL-2.0

//! `rswap-server`: see `rswap-server --help`.

fn main() -> std::process::ExitCode {
    rswap_server::server_main()
}
