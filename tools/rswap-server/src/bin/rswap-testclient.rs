// SPDX-License-Identifier: GPL-2.0

//! `rswap-testclient`: see `rswap-testclient --help`.

fn main() -> std::process::ExitCode {
    rswap_server::client_main()
}
